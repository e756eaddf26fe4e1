package server

import (
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Model access: a model outside the caller's allowlist (auth.Principal's
// Models, the group's list or the user's override, loaded from the store
// by every replica) does not exist for that caller. The inference chains
// refuse it before budget and admission, so no quota is reserved and no
// backend is chosen; the model routes leave it out of their lists.

// access refuses a request for a model the caller may not use, in the
// words the scheduler uses for a model no backend serves, so a hidden
// model cannot be told from an absent one.
type access struct{}

func (access) stage() outcome.Stage { return outcome.StageCheck }

func (access) run(_ *fasthttp.RequestCtx, ex *exchange) error {
	if ex.principal.Models.Allows(ex.req.Model) {
		return nil
	}
	// As for an unknown model at admission: the client's own mistakes
	// come first, also for a request whose decode was deferred.
	if err := ex.canonical(); err != nil {
		return err
	}
	return errHiddenModel(ex.req.Model)
}

// errHiddenModel is core/sched's answer for a model no backend knows.
func errHiddenModel(name string) error {
	return apierr.New(canon.ErrNotFound, "model_not_found",
		fmt.Sprintf("the model %q does not exist or is not served by any backend", logredact.Truncate(name, maxModelName)))
}

// visibleModels drops from list the models the caller may not use. The
// registry builds a fresh list per call, so it is filtered in place.
func (ex *exchange) visibleModels(list *canon.ModelList) {
	m := ex.principal.Models
	if m.All() {
		return
	}
	kept := list.Models[:0]
	for _, e := range list.Models {
		if m.Allows(e.ID) {
			kept = append(kept, e)
		}
	}
	clear(list.Models[len(kept):])
	list.Models = kept
}
