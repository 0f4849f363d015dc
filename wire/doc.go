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
//   - The reader takes an in-flight slot, reads one frame (with a read deadline of IdleTimeout
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
// written, then closes each connection.
//
// # Refusals and failures
//
// A request for an api key or version outside Config.Versions closes the connection, except
// ApiVersions, which is answered as Kafka answers it (v0, UNSUPPORTED_VERSION, our ApiVersions
// range) so the client retries lower. A bad frame size, a malformed header or body, an idle
// timeout, respond with an error, or a panic in Handle closes that connection only; each is one
// debug log line (a panic is logged at error level with its stack). Nothing a client sends can
// panic the process. A frame up to 8 MiB is allocated whole once its size is read, as Kafka
// does; a larger one grows as its bytes arrive, so it costs about what the client sent. A
// connection holds at most MaxInFlightBytesPerConn bytes of frames plus one frame.
//
// # Zero copy
//
// Decoded request bodies alias their frame buffer, so produce records reach the broker
// uncopied. Frames are read into pooled buffers; a handler that is done with a request's bytes
// calls Request.ReleaseFrame and the buffer is reused (the produce path does, after the append),
// otherwise it is left to the garbage collector. The writer encodes a response with kmsg AppendTo into a reused
// buffer. A response that implements SplicedResponse (a fetch response) leaves byte ranges out of
// that buffer and has them sent by their own writers (sendfile of segment bytes) in between.
package wire
