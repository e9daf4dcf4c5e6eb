package integration

import (
	"path/filepath"
	"testing"
	"time"
)

// systemPython is the interpreter apt's python3-confluent-kafka installs into.
const systemPython = "/usr/bin/python3"

// TestConfluentPython runs testdata/confluent_smoke.py (confluent-kafka,
// librdkafka): AdminClient create_topics, Producer produce + flush, Consumer
// assign() and read back. The script exits non-zero on any mismatch.
func TestConfluentPython(t *testing.T) {
	py := needTool(t, systemPython, "-c", "import confluent_kafka")
	script, err := filepath.Abs(filepath.Join("testdata", "confluent_smoke.py"))
	if err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, "")
	out := runTool(t, 3*time.Minute, "", py, script, b.Addr, "py-smoke")
	t.Logf("confluent_smoke.py:\n%s", out)
}
