package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

// newJob is an enqueue waiting for its group: the job, its InsertJobArgs,
// and once the group ran, the job stored and whether this call created it.
type newJob struct {
	job     *spoolv1.Job
	args    []any
	out     *spoolv1.Job
	created bool
}

// insertJobTypes are the PostgreSQL types of sqlrows.InsertJobCols.
var insertJobTypes = []string{"text", "text", "integer", "text", "bigint", "bigint", "integer", "bytea", "bytea", "integer", "bytea",
	"integer", "text", "text", "bytea", "bigint", "bigint", "bytea", "bigint", "integer", "bigint"}

// insertJobs inserts a group of jobs, given one array per column of
// sqlrows.InsertJobCols, in one statement. A job whose request id is taken
// is not inserted (as insertJob); the ids of those inserted come back.
var insertJobs = func() string {
	casts := make([]string, len(insertJobTypes))
	for i, t := range insertJobTypes {
		casts[i] = fmt.Sprintf("$%d::%s[]", i+1, t)
	}
	return `INSERT INTO jobs (` + sqlrows.InsertJobCols + `) SELECT * FROM unnest(` + strings.Join(casts, ", ") + `)
	ON CONFLICT (request_id) DO NOTHING RETURNING job_id`
}()

// selectRequests reads the jobs of request ids.
var selectRequests = `SELECT ` + sqlrows.JobCols + ` FROM jobs WHERE request_id = ANY($1)`

// argsSize is about what inserting a job of InsertJobArgs args sends.
func argsSize(args []any) int {
	n := 0
	for _, a := range args {
		if b, ok := a.([]byte); ok {
			n += len(b)
		}
	}
	return n
}

// runEnqueues inserts a group of new jobs in one statement, a transaction
// of its own. When it fails (a job id in use, a deadlock with another
// server's insert, a lost connection) nothing is inserted and every job
// of the group is enqueued alone.
func (s *Store) runEnqueues(group []*pending[*newJob]) {
	ctx := context.Background()
	created, err := s.insertGroup(ctx, group)
	if err != nil {
		s.fallbacks.Add(1)
		for _, p := range group {
			p.alone = true
		}
		return
	}
	var n notes
	var repeats []string
	for _, p := range group {
		if created[p.item.job.JobId] {
			p.item.out, p.item.created = p.item.job, true
			n.created(p.item.job)
		} else {
			repeats = append(repeats, p.item.job.RequestId)
		}
	}
	s.wake(n)
	s.outbox.add(n)
	if len(repeats) > 0 {
		s.readRepeats(ctx, group, repeats)
	}
}

// insertGroup inserts the jobs of group and returns the ids of those it
// created. The rows go in the order of their request ids, so that two
// servers inserting the same requests wait for each other in the same
// order rather than deadlock.
func (s *Store) insertGroup(ctx context.Context, group []*pending[*newJob]) (map[string]bool, error) {
	sorted := slices.Clone(group)
	slices.SortFunc(sorted, func(a, b *pending[*newJob]) int {
		return cmp.Or(cmp.Compare(a.item.job.RequestId, b.item.job.RequestId), cmp.Compare(a.item.job.JobId, b.item.job.JobId))
	})
	cols := make([]any, len(insertJobTypes))
	for c := range cols {
		cols[c] = column(sorted, c)
	}
	rows, err := s.pool.Query(ctx, insertJobs, cols...)
	if err != nil {
		return nil, pgErr(err, "insert %d jobs", len(group))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, pgErr(err, "insert %d jobs", len(group))
	}
	created := make(map[string]bool, len(ids))
	for _, id := range ids {
		created[id] = true
	}
	return created, nil
}

// column is the values of column c of the jobs of group. A column of
// strings, int32s or int64s without NULL goes as a slice of its type,
// which pgx encodes without reflecting on every value; any other as it is.
func column(group []*pending[*newJob], c int) any {
	switch group[0].item.args[c].(type) {
	case string:
		return typedColumn[string](group, c)
	case int32:
		return typedColumn[int32](group, c)
	case int64:
		return typedColumn[int64](group, c)
	}
	return anyColumn(group, c)
}

// typedColumn is column c as a []T, or as it is when a value is not a T.
func typedColumn[T any](group []*pending[*newJob], c int) any {
	col := make([]T, len(group))
	for i, p := range group {
		v, ok := p.item.args[c].(T)
		if !ok {
			return anyColumn(group, c)
		}
		col[i] = v
	}
	return col
}

func anyColumn(group []*pending[*newJob], c int) []any {
	col := make([]any, len(group))
	for i, p := range group {
		col[i] = p.item.args[c]
	}
	return col
}

// readRepeats answers the enqueues of group that created nothing with the
// jobs of their request ids, stored before. Those it cannot answer (the
// read failed, or the job is gone already) are enqueued alone.
func (s *Store) readRepeats(ctx context.Context, group []*pending[*newJob], requests []string) {
	stored := map[string]*spoolv1.Job{}
	rows, err := s.pool.Query(ctx, selectRequests, requests)
	if err == nil {
		var found []*sqlrows.Row
		found, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*sqlrows.Row, error) { return sqlrows.ScanJob(row) })
		for _, r := range found {
			stored[r.Job.RequestId] = r.Job
		}
	}
	for _, p := range group {
		if p.item.created {
			continue
		}
		if j := stored[p.item.job.RequestId]; err == nil && j != nil && p.item.job.RequestId != "" {
			p.item.out = j
		} else {
			p.alone = true
		}
	}
}
