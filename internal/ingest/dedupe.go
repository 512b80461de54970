package ingest

// Dedupe returns events with, per source, each id kept once (the first
// occurrence), in the order given.
//
// Senders deliver at least once, so the same event may come more than
// once, even within one request; its id is what tells it from another
// event with the same text and time. The first occurrence is kept, as it took its place
// in the log first. events itself is left as it was.
func Dedupe(events []Event) []Event {
	type key struct{ source, id string }
	seen := make(map[key]struct{}, len(events))
	kept := make([]Event, 0, len(events))
	for _, e := range events {
		k := key{e.Source, e.ID}
		if _, ok := seen[k]; ok {
			continue
		}
		seen[k] = struct{}{}
		kept = append(kept, e)
	}
	return kept
}
