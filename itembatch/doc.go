// Package itembatch cuts a list of JSON items into batches, the way AWS Step
// Functions' ItemBatcher does, for spool scatter.
//
// A scatter runs one job per batch of items. Sending each item to its own job
// is wasteful when items are small and many, and sending all of them to one
// job gives up the parallelism, so the items are cut into batches first. The
// spool scatter command does this before it creates a scatter, and Go clients
// can do the same with this package.
//
// The flow has three steps:
//
//   - [ReadItems] reads the items, as JSON Lines or as one JSON array, and
//     checks that each is valid JSON; [ReadCSVItems] reads a CSV table
//     whose header names the fields, a row an item.
//   - [Split] cuts them by count ([Config].MaxItems, like Step Functions'
//     MaxItemsPerBatch), by size ([Config].MaxBytes, like
//     MaxInputBytesPerBatch, 256 KiB unless set) and by group
//     ([Config].GroupBy). Or [FromCommand] hands them to a program the
//     user wrote, for cuts a Config cannot express.
//   - [Batch.JSON] gives each batch as the JSON array a job receives.
//
// For inputs too large to hold, [NewItemReader] and [NewCSVItemReader]
// read the same forms one item at a time, and a [Splitter] cuts the items
// as they come, by the same rules, holding only the batches still being
// filled. The spool server reads scatters' items in S3 this way.
//
// Sizes are measured on the compact JSON array a batch becomes, brackets and
// commas included, because that array is what travels to the job: the limit
// then means what the job will see, not an estimate of it.
//
// Problems that do not stop the cut, such as an item too big for any batch,
// come back as [Warning] values for the caller to show to the person who
// asked for the scatter.
package itembatch
