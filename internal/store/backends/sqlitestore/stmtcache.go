package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"

	"modernc.org/sqlite"
)

// Statement cache. database/sql hands a query string to the driver, and
// the SQLite driver compiles it anew each time: parsing and planning the
// same few statements (an enqueue's INSERT, a lease's UPDATE, the
// savepoints around every write) took a sixth of the server's time under
// load, all of it inside the one writer that every write waits for. So
// each connection keeps the statements it has compiled, by their text,
// and runs them again. A statement already running on the connection (a
// query whose rows are still open, asked again inside its own loop) is
// not reused: that call gets one of its own, closed after it.

// driverName is the name the caching driver is registered under.
const driverName = "spool-sqlite"

// maxCachedStmts bounds each connection's cache: queries built with a
// varying number of placeholders would otherwise grow it without end.
// Past the bound, statements are compiled for one use, as without a cache.
const maxCachedStmts = 128

func init() {
	sql.Register(driverName, cachingDriver{})
}

// cachingDriver opens SQLite connections that keep their statements.
type cachingDriver struct{}

func (cachingDriver) Open(name string) (driver.Conn, error) {
	c, err := (&sqlite.Driver{}).Open(name)
	if err != nil {
		return nil, err
	}
	return &cachingConn{conn: c.(sqliteConn), stmts: make(map[string]*cachedStmt)}, nil
}

// sqliteConn is what the SQLite driver's connection does that the cache
// passes on.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachingConn is a SQLite connection with a statement cache.
type cachingConn struct {
	conn sqliteConn

	mu       sync.Mutex
	stmts    map[string]*cachedStmt
	compiled int // statements compiled, for tests
	runs     int // statements run, for tests
}

type cachedStmt struct {
	st   driver.Stmt
	busy bool
}

var (
	_ driver.ExecerContext  = (*cachingConn)(nil)
	_ driver.QueryerContext = (*cachingConn)(nil)
)

func (c *cachingConn) Prepare(query string) (driver.Stmt, error) { return c.conn.Prepare(query) }
func (c *cachingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}
func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.conn.BeginTx(ctx, opts)
}
func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.conn.PrepareContext(ctx, query)
}
func (c *cachingConn) Ping(ctx context.Context) error         { return c.conn.Ping(ctx) }
func (c *cachingConn) ResetSession(ctx context.Context) error { return c.conn.ResetSession(ctx) }
func (c *cachingConn) IsValid() bool                          { return c.conn.IsValid() }

// Close closes the cached statements, then the connection.
func (c *cachingConn) Close() error {
	c.mu.Lock()
	var errs []error
	for q, cs := range c.stmts {
		errs = append(errs, cs.st.Close())
		delete(c.stmts, q)
	}
	c.mu.Unlock()
	return errors.Join(append(errs, c.conn.Close())...)
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	st, done, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	defer done()
	return st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	st, done, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		done()
		return nil, err
	}
	return &doneRows{Rows: rows, done: done}, nil
}

// stmt returns the compiled statement for query, and what to call once
// the caller is done with it: the cached one if it is free, otherwise one
// of its own.
func (c *cachingConn) stmt(ctx context.Context, query string) (driver.Stmt, func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs++
	if cs := c.stmts[query]; cs != nil && !cs.busy {
		cs.busy = true
		return cs.st, c.release(cs), nil
	}
	st, err := c.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	c.compiled++
	if _, held := c.stmts[query]; !held && len(c.stmts) < maxCachedStmts {
		cs := &cachedStmt{st: st, busy: true}
		c.stmts[query] = cs
		return st, c.release(cs), nil
	}
	return st, func() { _ = st.Close() }, nil
}

func (c *cachingConn) release(cs *cachedStmt) func() {
	return func() {
		c.mu.Lock()
		cs.busy = false
		c.mu.Unlock()
	}
}

// doneRows frees its statement for the next call when the rows close.
type doneRows struct {
	driver.Rows
	once sync.Once
	done func()
}

func (r *doneRows) Close() error {
	err := r.Rows.Close()
	r.once.Do(r.done)
	return err
}
