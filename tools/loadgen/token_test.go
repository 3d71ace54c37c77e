package main

import "testing"

func TestRequestTokensDiffer(t *testing.T) {
	ts := startServer(t, &testServer{})
	mustRun(t, "-url", ts.url+"/x", "-c", "4", "-n", "300", "-warmup", "0", "-kind", "mixed")
	if len(ts.bodies) != 300 {
		t.Fatalf("server kept %d distinct 201s, want 300", len(ts.bodies))
	}
	hashes := map[[32]byte]bool{}
	for _, h := range ts.bodies {
		hashes[h] = true
	}
	if len(hashes) != 300 {
		t.Fatalf("%d distinct bodies among 300 requests, want every body different", len(hashes))
	}
}
