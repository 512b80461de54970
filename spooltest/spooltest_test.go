package spooltest_test

import "testing"

// The package example's tests, run.
func TestSubmitAndWait(t *testing.T) { submitAndWait(t) }
func TestFakeWorker(t *testing.T)    { fakeWorker(t) }
