// Package pgproxy is the fault proxy's PostgreSQL data plane: it relays the
// connections of PostgreSQL clients to one server, follows the framing of
// the wire protocol (v3), and injects faults per query, with a seeded
// probability, switchable at run time through the same control API as the
// other planes (GET/PUT/DELETE /faults, /healthz, /metrics) and recorded in
// the same ledger (one entry per query).
//
// # Framing
//
// A connection starts with untyped packets (an int32 length, an int32
// code): an SSLRequest or a GSSENCRequest is answered 'N', and the client
// goes on in plain text (see TLS below); a CancelRequest is passed on to
// the upstream on a connection of its own; a StartupMessage (protocol 3.x)
// is passed on and starts the session. A length below 8 or above
// MaxStartupPacket, another code, or no startup packet within the startup
// timeout closes that connection. From then on every message is typed: a
// byte, then an int32 length that counts itself, so at least 4 and at
// most MaxMessage (1 GiB); a length out of range closes that connection
// (and no other), counted in faultproxy_pg_protocol_errors_total by
// reason. Messages up to 8 KiB are read whole; longer ones (a DataRow, a
// CopyData, a Bind of large parameters) are streamed through in pieces,
// so a connection holds about 32 KiB of buffers, plus the prefix of a
// long statement's text that match reads (at most MaxStatementText).
//
// # Queries
//
// The unit of a fault is a query: a simple Query (or a FunctionCall), or
// an extended-query batch (Parse, Bind, Describe, Execute, Close) up to its
// Sync; the server answers each with one ReadyForQuery. A batch's messages
// are held back until its Sync, a Flush, or 32 KiB, and decided on the
// statements it carries: the text of a Parse, and for a Bind or Execute of
// a named statement or portal the text of the Parse that prepared it. A
// query is in flight from the proxy's receipt of its Query, or of its
// batch's first Flush or its Sync (when the client starts waiting), until
// its ReadyForQuery goes to the client: faultproxy_inflight_requests
// counts them, so that a flat count of queries in flight while callers
// fail reads as a limit, as for an HTTP dependency. A batch of no
// statement (a lone Sync) is a query that no fault acts on. A COPY FROM
// STDIN sent with the extended protocol has its batch's Sync ignored by
// the server during the copy (libpq sends one anyway): the proxy follows,
// and the client's Sync after CopyDone ends that query.
//
// # Faults
//
// Each fault has a percent, the probability (0–100) that it applies to a
// query whose statements match its match expression (RE2, anywhere in the
// text; empty matches every query with a statement): rolled once per
// query from a generator of the proxy's seed and the query's sequence
// number, so a run with the same seed and query order decides the same.
//
//   - latency: the query's answer reaches the client no sooner than
//     Latency ± Jitter after the proxy received the query; the statement
//     runs on the server at once, and an answer that comes later than
//     that passes at once. Fired latencies add up. The held query is
//     the proxy's slow statement: a cancel request for its connection
//     ends the hold at once, and the client gets 57014 (the server's
//     answer is dropped), as from the server's cancelled statement, so a
//     client that gives up on a slow query frees it at once, also in the
//     count of queries in flight.
//   - error: the proxy answers the query itself, without the server seeing
//     it: an ErrorResponse with Code (a SQLSTATE, 57014 by default) and
//     Message, then, at its Sync, a ReadyForQuery with the transaction
//     status the server last reported (a transaction stays open, not
//     aborted, since the server ran nothing). A batch's messages are
//     dropped; a Flush before the Sync gets the ErrorResponse.
//   - hang: the query is never answered, nor sent on; the client's cancel
//     request (which the proxy passes on to the server) ends it as the
//     server ends a cancelled statement (57014), and closing the
//     connection ends it too.
//
// The first error or hang that fires wins. A new set applies to the next
// query of every connection; a query decided already keeps its decision.
// Answers keep their order: a query after a held or hung one waits for it.
//
// # Per query and per connection
//
// Everything above acts per query, on connections the proxy reads. A
// connection is per connection where the proxy cannot read it: with
// Config.TLSPassthrough, a client's SSLRequest (or a direct TLS handshake)
// is passed on to the server and the connection relayed as plain TCP; the
// fault set is then rolled once for the connection, its faults with a
// match never apply, a latency holds each piece of the server's data, a
// hang drops it, and an error closes the connection (a warning is logged
// once). Without TLSPassthrough the proxy answers an SSLRequest 'N': a
// client with sslmode=prefer (pgx's and libpq's default) goes on in plain
// text, and one with sslmode=require fails to connect.
//
// # Differences from Toxiproxy
//
// Toxiproxy, like this repository's TCP plane (faultproxy/tcpproxy),
// relays bytes: its toxics act per connection and per chunk, so a latency
// toxic delays every chunk of every statement (the log-in's round trips
// too), and it cannot fail one statement with an error the driver
// understands, nor leave one unanswered while others pass, nor pick
// statements by their text. This plane reads the protocol's framing, so a
// fault acts on the statements it matches, once per query, an error is a
// real ErrorResponse (a *pgconn.PgError with its SQLSTATE to pgx, the
// connection still usable), and a client's statement time-out works as
// against a slow server: its cancel request reaches the server, and ends
// a hang.
//
// # Data plane
//
// Each session is two goroutines: the frontend reads the client's messages
// and writes them to the server, and the pump reads the server's and
// writes them to the client, in turn with the queue of queries in flight,
// holding a delayed query's answer until its release and answering the
// queries the proxy answers itself. Both buffer their reads and writes and
// flush before a read that could wait, so a pass-through query costs a
// read and a write each way.
package pgproxy
