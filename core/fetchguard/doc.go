// Package fetchguard fetches images named by URL in client requests (an
// OpenAI image_url, an Anthropic image block with a url source) so the
// gateway can hand them inline to backends that cannot fetch, such as
// Ollama. It also decodes data: URLs, the other form a client may send.
//
// # Threat model
//
// The URL comes from an untrusted client, but the fetch runs from inside
// the gateway's network. Without a guard a client could make the gateway
// read cloud metadata (169.254.169.254, fd00:ec2::254), loopback admin
// ports, or any private service, and get the bytes back through a model's
// answer or learn about them from error messages and timing.
//
// # Rules
//
//   - Only http and https URLs without credentials; the port must be valid.
//   - Host names that are IP numbers in inet_aton spellings ("2130706433",
//     "0x7f.1", "0177.0.0.1", "127.1") are refused, not resolved, because C
//     resolvers would read them as addresses. localhost and the cloud
//     metadata names are refused by name.
//   - The address check runs at dial time, in the transport's DialContext:
//     the host is resolved once, every address must be allowed (a name with
//     one public and one private address is refused as a whole, because a
//     mixed answer is the usual DNS rebinding set-up), and the connection
//     goes to one of those checked IP literals. A net.Dialer Control hook
//     checks the socket address again just before connect. Nothing
//     resolves the name a second time, so rebinding between check and
//     connect cannot happen.
//   - Refused: unspecified, loopback, private, shared (CGNAT), link-local,
//     multicast, broadcast, reserved, benchmarking, documentation and IETF
//     special-purpose ranges; for IPv6 everything outside 2000::/3 except
//     the IPv4-mapped and NAT64 (64:ff9b::/96) forms, which are judged by
//     the IPv4 address they carry, as are 6to4 (2002::/16) and Teredo
//     (2001::/32). Config.AllowPrefixes lets an operator allow an internal
//     image store explicitly.
//   - Every redirect hop goes through the same dial and URL checks; at most
//     Config.MaxRedirects of them.
//   - The whole fetch has one deadline (Config.Timeout). Response headers
//     are bounded, the body is bounded by Config.MaxBytes (a Content-Length
//     over it is refused before reading), only status 200 is accepted, and
//     the response must say image/* and its bytes must be PNG, JPEG, GIF or
//     WebP.
//   - Requests carry a fixed User-Agent and Accept and nothing else: no
//     cookies, no credentials, no Referer, no proxy from the environment;
//     TLS certificates are verified.
//
// Errors are *Error with a Reason and a message safe to show the client;
// the message never names a resolved address. The cause, for logs only,
// is in Error.Err.
//
// Not covered: the gateway host's own public addresses on its interfaces
// (reachable as "local" traffic if a firewall trusts it), and telling a
// client apart a name that does not resolve (ReasonDNS) from one that
// resolves to a refused address (ReasonForbiddenAddress).
package fetchguard
