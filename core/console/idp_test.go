package console_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// idp is a real OpenID Connect provider (zitadel/oidc's pkg/op, with the
// in-memory storage and login form of its example server) on loopback.
type idp struct {
	issuer string
	users  map[string]*storage.User
	groups map[string][]string // user id → the groups claim
}

// The console's client at the provider.
const (
	idpClientID     = "mindrouter-console"
	idpClientSecret = "console-secret"
	idpPassword     = "correct horse battery"
)

// idpUser is one account at the provider.
type idpUser struct {
	ID, Email string
	Groups    []string
}

// startIDP starts a provider with users, whose only client is the console
// of a gateway at base.
func startIDP(t *testing.T, base string, users ...idpUser) *idp {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &idp{issuer: "http://" + ln.Addr().String(), users: map[string]*storage.User{}, groups: map[string][]string{}}
	for _, u := range users {
		p.users[u.ID] = &storage.User{ID: u.ID, Username: u.Email, Password: idpPassword, FirstName: "Test", LastName: u.ID,
			Email: u.Email, EmailVerified: true, PreferredLanguage: language.English}
		p.groups[u.ID] = u.Groups
	}
	client := storage.WebClient(idpClientID, idpClientSecret, base+"/console/login/callback")
	st := &groupsStorage{Storage: storage.NewStorageWithClients(p, map[string]*storage.Client{idpClientID: client}), groups: p.groups}
	srv := &http.Server{Handler: exampleop.SetupServer(p.issuer, st, nil, false), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return p
}

// The provider's storage.UserStore.
func (p *idp) GetUserByID(id string) *storage.User { return p.users[id] }
func (p *idp) GetUserByUsername(name string) *storage.User {
	for _, u := range p.users {
		if u.Username == name {
			return u
		}
	}
	return nil
}
func (p *idp) ExampleClientID() string { return storage.ServiceUserID }

// groupsStorage adds a "groups" claim to the ID token, as campus
// providers (Keycloak, Entra ID, Okta) do. Its e-mail is not in the ID
// token (the example client keeps profile claims to UserInfo, as OIDC
// Core 5.4 has it), so the console must read UserInfo too.
type groupsStorage struct {
	*storage.Storage
	groups map[string][]string
}

func (s *groupsStorage) SetUserinfoFromRequest(ctx context.Context, ui *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, ui, req, scopes); err != nil {
		return err
	}
	if g := s.groups[req.GetSubject()]; len(g) > 0 {
		ui.AppendClaims("groups", g)
	}
	return nil
}
