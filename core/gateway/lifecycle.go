package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// Component is a part of the gateway with a lifecycle: the plugin host,
// discovery, the API and metrics listeners today; the Redis, MySQL and
// ClickHouse clients and the admin listener as they arrive. Components
// start in order and close in the reverse order, so each one's
// dependencies outlive it.
type Component interface {
	Name() string
	// Start brings the component up; ctx bounds start-up only (long-lived
	// work uses the gateway's own context, given at construction).
	Start(ctx context.Context) error
	// Health is nil when the component can serve; it feeds /readyz.
	Health(ctx context.Context) error
	// Close releases the component, waiting up to ctx.
	Close(ctx context.Context) error
}

// lifecycle starts components in order and closes the started ones in
// reverse.
type lifecycle struct {
	log     *slog.Logger
	started []Component
}

func (l *lifecycle) start(ctx context.Context, cs ...Component) error {
	for _, c := range cs {
		if err := c.Start(ctx); err != nil {
			return fmt.Errorf("start %s: %w", c.Name(), err)
		}
		l.started = append(l.started, c)
		l.log.Debug("component started", "component", c.Name())
	}
	return nil
}

func (l *lifecycle) close(ctx context.Context) error {
	var errs []error
	for i := len(l.started) - 1; i >= 0; i-- {
		c := l.started[i]
		if err := c.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", c.Name(), err))
		}
	}
	l.started = nil
	return errors.Join(errs...)
}

// health reports every started component's health by name.
func (l *lifecycle) health(ctx context.Context) map[string]error {
	h := make(map[string]error, len(l.started))
	for _, c := range l.started {
		h[c.Name()] = c.Health(ctx)
	}
	return h
}

// funcComponent adapts functions to Component.
type funcComponent struct {
	name   string
	start  func(context.Context) error
	health func(context.Context) error
	close  func(context.Context) error
}

func (f *funcComponent) Name() string { return f.name }

func (f *funcComponent) Start(ctx context.Context) error {
	if f.start == nil {
		return nil
	}
	return f.start(ctx)
}

func (f *funcComponent) Health(ctx context.Context) error {
	if f.health == nil {
		return nil
	}
	return f.health(ctx)
}

func (f *funcComponent) Close(ctx context.Context) error {
	if f.close == nil {
		return nil
	}
	return f.close(ctx)
}
