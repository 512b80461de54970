package assembly

import (
	"context"
	"fmt"
	"github.com/spool-run/spool/internal/s3items"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spool-run/spool/internal/blob"
	"github.com/spool-run/spool/internal/blob/dirblob"
	"github.com/spool-run/spool/internal/blob/pgblob"
	"github.com/spool-run/spool/internal/blob/s3blob"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/datadir"
)

// openBlobs opens the blob store the configuration chooses beside the job
// store (config.BlobsType): nil when it chooses none.
func openBlobs(ctx context.Context, cfg *config.Config, log *slog.Logger) (blob.Store, error) {
	switch cfg.BlobsType() {
	case config.BlobsDir:
		return openBlobDir(cfg)
	case config.BlobsPostgres:
		s, err := pgblob.Open(ctx, cfg.Store.Postgres.URL)
		if err != nil {
			return nil, fmt.Errorf("blobs.type postgres: %w", err)
		}
		return s, nil
	case config.BlobsS3:
		c := cfg.Blobs.S3
		// One bucket beside the queues and tables usually lives where
		// they do.
		if c.Region == "" {
			c.Region = cfg.Store.AWS.Region
		}
		if c.Endpoint == "" {
			c.Endpoint = cfg.Store.AWS.Endpoint
		}
		return s3blob.Open(ctx, c)
	}
	log.Info("no blob store: jobs' files need blobs.s3.bucket on a server on AWS")
	return nil, nil
}

func openBlobDir(cfg *config.Config) (blob.Store, error) {
	dir := cfg.Blobs.Dir
	if dir == "" && cfg.Store.Type == "memory" {
		// Nothing of a memory store survives a stop, so neither do its
		// blobs, and it leaves no directory behind.
		tmp, err := os.MkdirTemp("", "spool-blobs-")
		if err != nil {
			return nil, fmt.Errorf("a temporary directory for blobs: %w", err)
		}
		s, err := dirblob.Open(tmp)
		if err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
		return tempBlobs{Store: s, dir: tmp}, nil
	}
	setting := "blobs.dir"
	if dir == "" {
		dir, setting = filepath.Join(cfg.Server.DataDir, datadir.Blobs), "server.data_dir"
	}
	s, err := dirblob.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting, err)
	}
	return s, nil
}

// tempBlobs removes its directory when closed.
type tempBlobs struct {
	*dirblob.Store
	dir string
}

func (t tempBlobs) Close() error {
	return os.RemoveAll(t.dir)
}

// openScatterS3 makes the client that reads scatters' items from users'
// buckets. It reaches no bucket yet: a scatter that names one it cannot
// read fails with what to check.
func openScatterS3(ctx context.Context, cfg *config.Config) (*s3items.Client, error) {
	c := cfg.Scatter.S3
	if c.Region == "" {
		c.Region = cfg.Store.AWS.Region
	}
	if c.Endpoint == "" {
		c.Endpoint = cfg.Store.AWS.Endpoint
	}
	cl, err := s3items.Open(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("scatter.s3: %w", err)
	}
	return cl, nil
}
