package events

import spoolv1 "github.com/spool-run/spool/gen/spool/v1"

// The numbers of the fields spool reads and writes in a JobEvent's
// protobuf without decoding it (headers, summaries, unpacking) and writes
// when encoding a batch straight from its lines. They are looked up by name
// so that a change to the schema cannot leave them behind unnoticed.
var (
	jobEventFields   = (&spoolv1.JobEvent{}).ProtoReflect().Descriptor().Fields()
	fieldSequence    = jobEventFields.ByName("sequence").Number()
	fieldTimestamp   = jobEventFields.ByName("timestamp").Number()
	fieldEventType   = jobEventFields.ByName("event_type").Number()
	fieldAttempt     = jobEventFields.ByName("attempt").Number()
	fieldOutputData  = jobEventFields.ByName("output_data").Number()
	fieldOutputBatch = jobEventFields.ByName("output_batch").Number()
	eventData        = jobEventFields.ByName("output_batch").ContainingOneof()

	tsFields    = jobEventFields.ByName("timestamp").Message().Fields()
	fieldSecond = tsFields.ByName("seconds").Number()
	fieldNanos  = tsFields.ByName("nanos").Number()

	outputFields      = (&spoolv1.OutputEvent{}).ProtoReflect().Descriptor().Fields()
	fieldOutputBytes  = outputFields.ByName("output").Number()
	fieldOutputStream = outputFields.ByName("stream").Number()
	fieldLineNumber   = outputFields.ByName("line_number").Number()
	fieldOutputPart   = outputFields.ByName("partial").Number()

	batchFields     = (&spoolv1.OutputBatchEvent{}).ProtoReflect().Descriptor().Fields()
	fieldOutputs    = batchFields.ByName("outputs").Number()
	fieldStartSeq   = batchFields.ByName("start_sequence").Number()
	fieldEndSeq     = batchFields.ByName("end_sequence").Number()
	fieldTimestamps = batchFields.ByName("timestamps").Number()
	fieldPlayback   = batchFields.ByName("playback_interval_millis").Number()
	fieldFirstLine  = batchFields.ByName("first_line").Number()

	itemFields      = (&spoolv1.OutputItem{}).ProtoReflect().Descriptor().Fields()
	fieldItemBytes  = itemFields.ByName("output").Number()
	fieldItemStream = itemFields.ByName("stream").Number()
	fieldItemPart   = itemFields.ByName("partial").Number()
)
