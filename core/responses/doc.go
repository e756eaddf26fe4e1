// Package responses keeps the state of the OpenAI Responses and
// Conversations APIs for their users, in a store.ResponseStore (MySQL or
// the embedded SQLite store). It implements server.Keeper: the
// translator plugin turns Responses requests and answers into the
// canonical schema; this package only reads and writes the wire shapes it
// stores.
//
// # A turn
//
// Begin reads store (default true), previous_response_id and conversation
// (a string or {"id"}) from a POST /v1/responses body, loads the history
// they name (404 for an unknown or another owner's id; both together is a
// 400) and returns the body with "input" = history items + the request's
// items and those two fields removed. A previous response's history is
// its stored expanded input followed by its output items, so a chain is
// one read; a conversation's is its items in order. Instructions are not
// history (as in OpenAI's API, they do not carry over). Request items are
// normalised as OpenAI lists them: a string input is one user message, a
// message gets its "type" and text parts, and an item without an id gets
// one (msg_, fc_, fco_, rs_ or item_ and 32 hex).
//
// With no history to splice (no previous_response_id, no conversation),
// Begin is on every such request's path to its first token, so it only
// scans the body once, allocating nothing but the Turn, and returns it
// as it is: the scan proves that the items would be accepted (types,
// ids, the reserved image scheme, MaxItemBytes by a bound on their
// re-encoded size), and the Turn normalises them, gives them ids and
// moves their images to blobs when it stores the response. Whatever the
// scan cannot prove takes the full path, which answers as before. With a
// key repeated, the last occurrence counts there, as in the translators.
//
// The Turn it returns sees the bytes sent to the client: the body of a
// non-streamed answer, or the SSE stream, scanned line by line keeping
// only a possible terminal event (response.completed, .incomplete,
// .failed), whose "response" is the whole object. There, before the write
// returns, it stores the response (store true; a failed response is
// stored too, as OpenAI keeps it) with previous_response_id and
// conversation set in the stored object, and appends the request's items
// and the output items to the conversation (not for a failed response).
// A stream that ends without a terminal event stores nothing.
//
// # Images
//
// An input_image whose image_url is a data: URL longer than
// BlobThreshold (16 KiB) is stored once, content-addressed, as a blob;
// the stored item says "mr-blob:sha256:<hex>" instead, and the keeper puts
// the data URL back wherever it hands items out (the spliced body,
// input_items, conversation items). Clients may not send that scheme. A
// blob lives while a stored response or conversation refers to it.
//
// # Ownership and lifetime
//
// Everything belongs to auth.Principal.UserID (0, the bootstrap admin
// key's, included); another user's id is answered exactly like an unknown
// one. Writes and reads touch a response or conversation; Run deletes
// what was not touched for Retention, then the blobs nothing refers to.
package responses
