package sqlrows

import (
	"database/sql"
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// KeyCols are the columns ScanKey reads, in order. Times are Unix
// microseconds; queues is a JSON array.
const KeyCols = `name, hash, role, queues, created_at, last_used_at, revoked_at`

// ScanKey reads one row of KeyCols.
func ScanKey(sc Scanner) (store.KeyRecord, error) {
	var (
		k                 spoolv1.Key
		hash, queues      string
		role              int32
		created           int64
		lastUsed, revoked sql.NullInt64
	)
	if err := sc.Scan(&k.Name, &hash, &role, &queues, &created, &lastUsed, &revoked); err != nil {
		return store.KeyRecord{}, err
	}
	k.Role = spoolv1.KeyRole(role)
	if err := json.Unmarshal([]byte(queues), &k.Queues); err != nil {
		return store.KeyRecord{}, corrupt("key", k.Name, "queues", err)
	}
	k.CreatedAt = timestamppb.New(time.UnixMicro(created))
	if lastUsed.Valid {
		k.LastUsedAt = timestamppb.New(time.UnixMicro(lastUsed.Int64))
	}
	if revoked.Valid {
		k.RevokedAt = timestamppb.New(time.UnixMicro(revoked.Int64))
	}
	return store.KeyRecord{Key: &k, Hash: hash}, nil
}

// InsertKey creates a key (InsertKeyArgs) unless its name or hash is
// taken; then it changes nothing.
const InsertKey = `INSERT INTO keys (name, hash, role, queues, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`

// InsertKeyArgs are InsertKey's arguments for k.
func InsertKeyArgs(k store.KeyRecord) []any {
	queues, _ := json.Marshal(append([]string{}, k.Key.GetQueues()...))
	return []any{k.Key.GetName(), k.Hash, int32(k.Key.GetRole()), string(queues), Micros(k.Key.GetCreatedAt().AsTime())}
}
