package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadTest2JSON(t *testing.T) {
	p := write(t, "a.json", `{"Action":"run","Package":"m/x","Test":"TestA"}
{"Action":"pass","Package":"m/x","Test":"TestA","Elapsed":1}
{"Action":"fail","Package":"m/x","Test":"TestB/sub","Elapsed":1}
{"Action":"fail","Package":"m/x","Test":"TestB","Elapsed":1}
{"Action":"skip","Package":"m/x","Test":"TestC","Elapsed":0}
not json
{"Action":"fail","Package":"m/x","Elapsed":3}
`)
	got, order, err := readTest2JSON(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"TestA": "pass", "TestB/sub": "fail", "TestB": "fail", "TestC": "skip"}
	if !reflect.DeepEqual(got, want) || len(order) != 4 || order[0] != "TestA" {
		t.Errorf("got %v %v, want %v", got, order, want)
	}
	// Several packages: names carry the package; a package failing with no
	// failed test (build error, panic outside a test) is one failure.
	p = write(t, "b.json", `{"Action":"pass","Package":"github.com/o/m/sasl","Test":"TestS"}
{"Action":"fail","Package":"github.com/o/m/proto","Elapsed":1}
{"Action":"pass","Package":"github.com/o/m","Test":"TestR"}
`)
	got, _, _ = readTest2JSON(p)
	want = map[string]string{"sasl.TestS": "pass", "proto (package)": "fail", "m.TestR": "pass"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("multi-package: got %v, want %v", got, want)
	}
}

func TestReadSmoke(t *testing.T) {
	p := write(t, "s.smoke", "PASS metadata\nFAIL produce-gzip: read 3 of 5\nnoise line\nSKIP txn: old client\n% librdkafka chatter\n")
	got, order, err := readSmoke(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"metadata": "pass", "produce-gzip": "fail", "txn": "skip"}
	if !reflect.DeepEqual(got, want) || strings.Join(order, ",") != "metadata,produce-gzip,txn" {
		t.Errorf("got %v %v, want %v", got, order, want)
	}
}

func TestKnownAndGrouped(t *testing.T) {
	ks, err := loadKnown(write(t, "k.txt", "# comment\nkafka-go root.*\tTestSASL.*|TestX\tneeds SASL\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := reason(ks, "kafka-go root package tests", "TestSASL/PLAIN"); got != "needs SASL" {
		t.Errorf("reason: got %q", got)
	}
	if got := reason(ks, "franz-go pkg/kgo integration", "TestX"); got != "" {
		t.Errorf("reason for another suite: got %q, want none", got)
	}
	r := &Results{Suites: []Suite{{Client: "c", Suite: "s", Failures: []Outcome{
		{Test: "TestA", Reason: "r1"}, {Test: "TestA/sub", Reason: "r1"}, {Test: "TestB", Reason: "r1"}, {Test: "TestC"}}}}}
	got := grouped(r, func(s Suite) []Outcome { return s.Failures })
	want := []string{"- c s: `TestA`, `TestB`: r1", "- c s: `TestC`: unexplained"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("grouped: got %q, want %q", got, want)
	}
}

func TestWriteReadme(t *testing.T) {
	p := write(t, "README.md", "# x\n\nbefore\n"+beginMarker+"\nold\n"+endMarker+"\nafter\n")
	r := &Results{Date: "2026-01-02T03:04:05Z", Suites: []Suite{{Client: "kcat", Version: "1", Suite: "smoke", Passed: 9}}}
	if err := writeReadme(p, r); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(p)
	s := string(raw)
	if strings.Contains(s, "old") || !strings.Contains(s, "| kcat | 1 | smoke | 9 | 0 | 0 |") || !strings.HasSuffix(s, endMarker+"\nafter\n") {
		t.Errorf("README:\n%s", s)
	}
	if err := writeReadme(write(t, "R.md", "no markers"), r); err == nil {
		t.Error("no markers: want an error")
	}
}

// TestGroupedStableOrder checks that the skip and failure lines do not
// depend on the order a suite reported its tests in.
func TestGroupedStableOrder(t *testing.T) {
	a := &Results{Suites: []Suite{{Client: "c", Suite: "s", Skips: []Outcome{
		{Test: "TestZ", Reason: "zz"}, {Test: "TestB", Reason: "aa"}, {Test: "TestA", Reason: "aa"}, {Test: "TestQ"}}}}}
	b := &Results{Suites: []Suite{{Client: "c", Suite: "s", Skips: []Outcome{
		{Test: "TestQ"}, {Test: "TestA", Reason: "aa"}, {Test: "TestZ", Reason: "zz"}, {Test: "TestB", Reason: "aa"}}}}}
	pick := func(s Suite) []Outcome { return s.Skips }
	ga, gb := grouped(a, pick), grouped(b, pick)
	want := []string{"- c s: `TestA`, `TestB`: aa", "- c s: `TestQ`: unexplained", "- c s: `TestZ`: zz"}
	if !reflect.DeepEqual(ga, want) || !reflect.DeepEqual(gb, want) {
		t.Errorf("grouped: got %q and %q, want %q", ga, gb, want)
	}
}
