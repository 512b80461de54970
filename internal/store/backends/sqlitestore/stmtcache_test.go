package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

// openCaching opens a database with one connection of the caching driver,
// holding rows 1, 2 and 3 in table t.
func openCaching(t *testing.T) (*sql.DB, *sql.Conn) {
	t.Helper()
	db, err := sql.Open(driverName, "file:"+filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	for _, q := range []string{`CREATE TABLE t (x INTEGER)`, `INSERT INTO t VALUES (1), (2), (3)`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return db, conn
}

// cacheState reads a connection's cache: statements compiled and held.
func cacheState(t *testing.T, conn *sql.Conn) (compiled, held int) {
	t.Helper()
	err := conn.Raw(func(dc any) error {
		c := dc.(*cachingConn)
		c.mu.Lock()
		defer c.mu.Unlock()
		compiled, held = c.compiled, len(c.stmts)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return compiled, held
}

func TestStmtCacheCompilesOnce(t *testing.T) {
	_, conn := openCaching(t)
	ctx := context.Background()
	before, _ := cacheState(t, conn)
	for i := range 10 {
		var n int
		if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE x > ?`, i%3).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want := 3 - i%3; n != want {
			t.Fatalf("run %d: count %d, want %d", i, n, want)
		}
		if _, err := conn.ExecContext(ctx, `UPDATE t SET x = x WHERE x = ?`, i); err != nil {
			t.Fatal(err)
		}
	}
	if after, _ := cacheState(t, conn); after-before != 2 {
		t.Fatalf("compiled %d statements for 2 queries run 10 times each", after-before)
	}
}

// A query asked again while its own rows are still open gets a statement
// of its own: reusing the open one would restart the outer loop.
func TestStmtCacheNestedSameQuery(t *testing.T) {
	db, _ := openCaching(t)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	const q = `SELECT x FROM t WHERE x >= ? ORDER BY x`
	rows, err := tx.QueryContext(ctx, q, 1)
	if err != nil {
		t.Fatal(err)
	}
	var outer []int
	for rows.Next() {
		var x, inner int
		if err := rows.Scan(&x); err != nil {
			t.Fatal(err)
		}
		outer = append(outer, x)
		if err := tx.QueryRowContext(ctx, q, 3).Scan(&inner); err != nil || inner != 3 {
			t.Fatalf("inner query: %d, %v", inner, err)
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(outer) != "[1 2 3]" {
		t.Fatalf("outer rows %v, want [1 2 3]", outer)
	}
	// Once closed, the cached statement serves the next call again.
	var x int
	if err := tx.QueryRowContext(ctx, q, 2).Scan(&x); err != nil || x != 2 {
		t.Fatalf("after the loop: %d, %v", x, err)
	}
}

func TestStmtCacheBounded(t *testing.T) {
	_, conn := openCaching(t)
	ctx := context.Background()
	for i := range maxCachedStmts + 20 {
		var n int
		if err := conn.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) + %d FROM t`, i)).Scan(&n); err != nil || n != 3+i {
			t.Fatalf("query %d: %d, %v", i, n, err)
		}
	}
	if _, held := cacheState(t, conn); held > maxCachedStmts {
		t.Fatalf("cache holds %d statements, bound %d", held, maxCachedStmts)
	}
}
