// Package ingest decodes the logs of programs spool did not start, as two
// kinds of senders deliver them over HTTP:
//
//   - Amazon Data Firehose's HTTP endpoint delivery of CloudWatch Logs
//     subscription data (DecodeFirehose, answered with a FirehoseResponse):
//     a JSON request whose records each hold, base64-encoded, a
//     gzip-compressed CloudWatch Logs message with the events of one log
//     stream;
//   - newline-delimited JSON from log shippers such as Vector's and Fluent
//     Bit's HTTP outputs (DecodeLines): one object per line with a source,
//     an id, a timestamp and a message.
//
// Both give Events. The package only decodes: serving HTTP and storing the
// events belong to its callers. ReadFirehose and FirehoseDelivery.Decode
// are DecodeFirehose in two steps, for a caller that bounds the memory of
// all the requests it decodes at once: the first measures what the
// records decode to (DecodedBytes) without holding it, the second decodes
// them. A sender may compress the whole body
// (Content-Encoding: gzip, which Firehose's GZIP content encoding and the
// shippers' compression options set); the caller then hands the decoder
// the decompressing reader, and Limits.MaxBodyBytes bounds what comes out
// of it.
//
// # All or nothing
//
// A decoder gives either every event of a request or an error and no
// events. Senders retry a refused request as a whole (Firehose retries,
// then backs the request up to S3; shippers retry their batch), so a
// request accepted in part would leave a silent gap in a log where the
// sender believes all went well, or fill it later with what it sends again.
// Errors say where the problem is and what it is: records and their events
// are counted from 0, as indexes into the JSON arrays ("record 3, event 7"
// is records[3] and, inside its data, logEvents[7]); lines are counted
// from 1, as editors count them ("line 4"). An error wraps ErrTooLarge
// when the input is over one of the Limits, and ErrMalformed when it does
// not follow its format.
//
// Text is taken as it was sent or refused: a source, an id or a message
// that is not valid UTF-8 is refused, where encoding/json alone would
// quietly replace the bad bytes, since a log line changed on its way in is
// worse than one refused. Sources and ids also carry no control
// characters, since they end up in names, keys and links. A message loses
// one trailing newline, which is how lines end, not part of them; newlines
// inside a message stay, and the caller decides what a line is.
//
// # Order and duplicates
//
// The order of the lines of a log is the order in which spool first
// accepts their events, not their timestamps. CloudWatch and the shippers
// deliver events out of order and deliver some of them again (after a
// timeout, a retry, a restart), so an event may arrive long after later
// ones; a log that renumbered its old lines to fit a late event in by time
// would break every link to a line. The timestamp is kept as data only.
//
// Within one request, events keep the order they have in the request.
// Dedupe keeps the first occurrence of each id per source; the same
// (source, id) key lets a store recognise an event delivered again in a
// later request.
package ingest
