package mototest

import (
	"net/http"
	"testing"
)

// TestStart: moto_server answers at the URL Start returns.
func TestStart(t *testing.T) {
	u := Start(t)
	resp, err := http.Get(u + "/moto-api/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("moto_server's dashboard API answered %s", resp.Status)
	}
}
