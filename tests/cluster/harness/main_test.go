package harness

import "testing"

func TestMain(m *testing.M) { Main(m) }

// smallProps keep the self-tests' nodes light on 2 cores: one partition for
// each internal topic, no log cleaner.
var smallProps = map[string]string{
	"offsets.topic.num.partitions":         "1",
	"transaction.state.log.num.partitions": "1",
	"log.cleaner.enable":                   "false",
}
