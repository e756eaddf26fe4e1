// Package admin serves the admin API (/api/admin/…) and the self-service
// API (/api/me…) over the store, with the reference implementation's paths
// and response shapes so its users' scripts keep working.
//
// The server authenticates the caller first and hands the Principal and the
// size-bounded body to Handler.Serve. Scopes: everything under /api/admin
// needs the admin scope, except GETs, which the audit (read-only) scope may
// also use; /api/me needs any valid key, and a user only ever sees and
// changes their own keys (another user's key id answers 404, as an unknown
// id does, so ids cannot be probed).
//
// Errors are FastAPI's shape, {"detail": "<message>"}: 400 for a bad body,
// field, query parameter or path id (the message names it), 403 for a
// missing scope, 404 for an unknown id or route, 405 with Allow for a wrong
// method, 409 for a conflict (duplicate name, a group still in use, a node
// still referenced, max_keys reached). Bodies are decoded strictly: unknown
// fields, wrong types, out-of-range numbers and over-long strings are 400s.
// A store failure is the only 500, and its text is logged, never sent.
//
// Every change is recorded with Store.RecordAdmin (actor, action, target, a
// JSON detail without secrets, remote address) and, after key, user or
// group changes, the Invalidator drops cached credentials on every replica.
// Secrets never leave: keys are returned once, at creation (full_key), and
// otherwise shown by prefix; hashes and node sidecar keys are never in a
// response, a log line or an audit detail.
//
// Compatibility fields. The reference's request bodies carry fields
// MindRouter has no use for; they are accepted (type-checked) and ignored so
// scripts keep working: users' password, role, college, department and
// intended_use (MindRouter has keys, no passwords), groups' display_name,
// backends' gpu_memory_gb and gpu_type, nodes' hostname. Responses carry
// display_name (the group's name) and node_name for the same reason.
//
// Backends and nodes change in the store first; Options.Backends then
// applies the change to this gateway's live registry, and the response's
// applied/apply_error say how that went. A backend declared in the YAML
// config (from_config) is written again from the config at each start, so
// API changes to it last until the next restart.
//
// The CLI (mindrouter admin) drives the same routes in-process through
// Handler.Do, so it validates, audits and answers exactly as the API does.
package admin
