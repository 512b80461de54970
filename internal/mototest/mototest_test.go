package mototest

import (
	"net/http"
	"testing"
)

// TestFor: moto_server answers at the URL of the server For starts.
func TestFor(t *testing.T) {
	u := For(t).URL
	resp, err := http.Get(u + "/moto-api/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("moto_server's dashboard API answered %s", resp.Status)
	}
}
