package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
)

// placeStdin decides where a job's stdin goes: inline in p when the job
// record holds it with the rest of p, else uploaded first and named in
// p.StdinUpload. from, when set, is the stdin (p.Stdin is then empty);
// only as much of it as fits inline is held in memory.
func (c *Client) placeStdin(ctx context.Context, from io.Reader, p *spoolv1.JobParams) error {
	room := convert.MaxParamBytes - convert.ParamBytes(p)
	if from == nil {
		if len(p.GetStdin()) == 0 || room >= 0 {
			return nil
		}
		from, p.Stdin = bytes.NewReader(p.GetStdin()), nil
	} else {
		if len(p.GetStdin()) > 0 {
			return apierr.Invalid("give Stdin or StdinFrom, not both")
		}
		head, err := io.ReadAll(io.LimitReader(from, int64(max(room, 0))+1))
		if err != nil {
			return fmt.Errorf("reading the job's stdin: %w", err)
		}
		if len(head) <= room {
			p.Stdin = head
			return nil
		}
		from = io.MultiReader(bytes.NewReader(head), from)
	}
	id, err := c.upload(ctx, from)
	if err != nil {
		return err
	}
	p.StdinUpload = id
	return nil
}

// maxUploadAnswer bounds the answer to an upload: an id, a size and a
// checksum.
const maxUploadAnswer = 4 << 10

// upload streams r to the server as a stdin for a job to come and returns
// the upload's id.
func (c *Client) upload(ctx context.Context, r io.Reader) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.rest.URL("/api/v1/uploads"), r)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.rest.Do(req)
	if err != nil {
		return "", fmt.Errorf("uploading the job's stdin: %w", err)
	}
	defer resp.Body.Close()
	var up struct {
		UploadID string `json:"upload_id"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxUploadAnswer)).Decode(&up); err != nil || up.UploadID == "" {
		return "", fmt.Errorf("uploading the job's stdin: the server at %s answered %s without an upload id: is it a spool server of this version?", c.url, resp.Status)
	}
	return up.UploadID, nil
}
