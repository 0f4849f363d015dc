// Package wire is sluice's network layer: TCP listeners, Kafka request framing, request and
// response headers, kmsg decoding and encoding, per-connection ordering and limits. It knows
// nothing of topics; the broker sees only decoded requests (Handler) and answers them (Respond).
//
// # Framing
//
// A request is a 4-byte big-endian size followed by that many bytes: request header v1 (api key
// int16, api version int16, correlation id int32, client id nullable int16-length string) or,
// when the request is flexible at its version (KIP-482), header v2 (v1 plus a tagged-field
// section), then the body. ApiVersions is flexible from v3. A response is a 4-byte size, the
// correlation id, a tagged-field section when the response is flexible (response header v1) —
// except ApiVersions, whose response header is always v0 — then the body, encoded at the
// request's version.
//
// # Model
//
// Each connection has three goroutines and bounded hand-offs between them:
//
//   - The reader takes an in-flight slot, reserves the frame's memory in the server's
//     MemoryPool once its size is read (see Limits across connections), reads one frame (with a read deadline of IdleTimeout
//     per read, so a stalled half frame is cut off too), decodes it and queues it. With
//     MaxInFlightPerConn requests unanswered, or MaxInFlightBytesPerConn bytes of frames held,
//     the reader reads nothing: TCP pushes back on the client. A frame declaring more than MaxRequestBytes is not read. A
//     client silent between frames while it waits for its own unanswered requests is not idle.
//     When the client closes (or half-closes) between frames, the responses it is owed are
//     still sent before the connection closes.
//   - The handler goroutine calls Handler.Handle for the connection's requests one at a time,
//     in the order they were sent. Handle may answer at once or park the request and call
//     respond later from any goroutine.
//   - The writer sends responses strictly in request order, whatever order respond is called
//     in, coalescing those that are ready into one Write (a reused buffer, so one syscall per
//     batch), and frees their slots once written. A write that makes no progress for
//     IdleTimeout closes the connection. respond(nil, nil) sends nothing but frees the slot
//     (acks=0 produce).
//
// Server.Shutdown stops accepting and reading, lets every request already read be answered and
// written, then closes each connection. Once shutting down, a write that makes no progress for
// drainWriteTimeout (2 s) closes its connection, so a client that stopped reading holds up
// shutdown that long, not IdleTimeout.
//
// # Limits across connections
//
// A MemoryPool (queued.max.request.bytes) bounds the request bytes held by every connection
// sharing it, as Kafka's memory pool does: once a frame's size is read its memory is reserved
// before any of its body is read, and given back when the request is released or answered. A
// frame that does not fit waits with its connection muted (bytes stay in the kernel), for at
// most IdleTimeout, as Kafka closes a muted connection idle that long; nothing is refused for
// want of memory. A quarter of the pool is kept for frames of at most 1 MiB, so clients that
// declare huge frames and send them slowly mute each other rather than ordinary clients. A frame
// larger than 8 MiB is read in 1 MiB chunks as its bytes arrive (memory follows what the client
// sent) and reserved at twice its size until the chunks are copied into one buffer. A frame is
// always admitted when nothing else is held, so any frame up to MaxRequestBytes is served.
// When queued.max.request.bytes is Kafka's default, -1 (unbounded), sluice uses
// DefaultQueuedMaxRequestBytes: 512 MiB, or twice socket.request.max.bytes if more.
//
// ConnLimits are Kafka's connection quotas, shared by the listeners given the same one:
// past max.connections the listeners stop accepting until a connection closes; a connection from
// an address already at max.connections.per.ip (or its override) is closed at once, and logged;
// past max.connection.creation.rate per second (a burst of one second's worth), accepting waits.
// Config.IPRates (conn_ip_rate.go) is the connection_creation_rate quota of ip entities: a
// connection over its address's rate is not counted, never served, and closed after its
// throttle time, as Kafka's acceptor delays closing it.
//
// # Refusals and failures
//
// A request for an api key or version outside Config.Versions closes the connection, except
// ApiVersions, which is answered as Kafka answers it (v0, UNSUPPORTED_VERSION, our ApiVersions
// range) so the client retries lower. A bad frame size, a malformed header or body, an idle
// timeout, respond with an error, or a panic in Handle closes that connection only; each is one
// debug log line (a panic is logged at error level with its stack). Nothing a client sends can
// panic the process. A frame up to 8 MiB is allocated whole once its size is read, as Kafka
// does; a larger one is read in chunks as its bytes arrive, so it costs about what the client
// sent. A connection holds at most MaxInFlightBytesPerConn bytes of frames plus one frame, and
// all connections together at most their MemoryPool's capacity.
//
// # Security
//
// Config.SecurityProtocol is the listener's: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. With
// Config.TLS (SSL, SASL_SSL) each connection is a crypto/tls server connection whose handshake
// the reader completes first (at most tlsHandshakeTimeout); on SSL the verified client
// certificate's subject, as RFC 2253 the way Java prints it, is mapped by
// ssl.principal.mapping.rules (PrincipalMapper) to the principal, else it is User:ANONYMOUS.
// BuildTLSConfig reads Kafka's ssl.* keys: PEM, JKS and PKCS12 stores (keystore.go; LoadKeyStore,
// KeystoreCertificates and TruststorePool serve a TLS client too). On a listener with
// Config.Divert (the controller listener) the handshake happens before the first 4 bytes are
// sniffed, so a diverted connection (raft) is inside TLS too.
//
// With Config.SASL (SASL_PLAINTEXT, SASL_SSL) the connection must authenticate first, as with
// Kafka's SaslServerAuthenticator: until it has, the reader reads one frame at a time (the
// handler finishes each before the next is read), each at most SASLConfig.MaxReceiveBytes, and
// only ApiVersions (served by the broker), SaslHandshake and SaslAuthenticate (served here,
// sasl.go) are accepted; anything else closes the connection unanswered. SaslHandshake v0 is
// followed by raw size-prefixed tokens instead of SaslAuthenticate. Mechanisms: PLAIN,
// SCRAM-SHA-256/512 (scram.go, RFC 5802 without channel binding) and OAUTHBEARER
// (sasl_oauth.go, RFC 7628: Kafka's unsecured JWTs, or JWTs signed by a key of a JWKS,
// sasl_oauth_jwks.go; a refused token is answered with the RFC's JSON status as the
// challenge, and the client's \x01 then fails the exchange with it). A failure is answered with
// SASL_AUTHENTICATION_FAILED and Kafka's message after FailedAuthDelay, logged once at info
// without the token, and the connection closes once the answer is written. The principal
// (ConnInfo.Principal) is User:<name>. KIP-368: with MaxReauth the session ends that long
// after authentication, or when the credential expires (an OAUTHBEARER token's exp) if that is
// sooner (SaslAuthenticate v1+ tells the client); a SaslHandshake on an
// authenticated connection re-authenticates it (same mechanism, same principal, or it closes),
// and any other request after the session ended closes the connection.
//
// # Zero copy
//
// Decoded request bodies alias their frame buffer, so produce records reach the broker
// uncopied. Frames are read into pooled buffers; a handler that is done with a request's bytes
// calls Request.ReleaseFrame and the buffer is reused (the produce path does, after the append),
// otherwise it is left to the garbage collector. The writer encodes a response with kmsg AppendTo into a reused
// buffer. A response that implements SplicedResponse (a fetch response) leaves byte ranges out of
// that buffer and has them sent by their own writers (sendfile of segment bytes) in between.
// On a TLS connection the splices are written through TLS (a copy): sendfile would send the
// segment bytes unencrypted.
package wire
