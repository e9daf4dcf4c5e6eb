package metadata

import (
	"crypto/rand"
	"fmt"
	"log/slog"
)

// The values the concept packages define, as the tests here need them
// (metadata may not import security or quota).
const (
	scramSHA256      int8 = 1 // security.ScramSHA256
	scramSHA512      int8 = 2 // security.ScramSHA512
	producerByteRate      = "producer_byte_rate"
	consumerByteRate      = "consumer_byte_rate"
)

func strp(s string) *string { return &s }

func newACLID() ACLID {
	var id ACLID
	if _, err := rand.Read(id[:]); err != nil {
		panic(err)
	}
	return id
}

// testChecks is Checks with simple rules of the same shape as the
// concepts' (appliance passes theirs): a known resource type, a non-empty
// entity of known types, a known mechanism.
type testChecks struct{}

func (testChecks) ACL(b ACLBinding) error {
	if b.ResourceType < 2 || b.ResourceType > 7 {
		return fmt.Errorf("unknown resource type %d", b.ResourceType)
	}
	return nil
}

func (testChecks) ClientQuotaEntity(parts []ClientQuotaEntityPart) error {
	if len(parts) == 0 {
		return fmt.Errorf("invalid empty client quota entity")
	}
	for _, p := range parts {
		if p.Type != "user" && p.Type != "client-id" && p.Type != "ip" {
			return fmt.Errorf("unknown entity type %q", p.Type)
		}
	}
	return nil
}

func (testChecks) ScramMechanism(m int8) string {
	switch m {
	case scramSHA256:
		return "SCRAM-SHA-256"
	case scramSHA512:
		return "SCRAM-SHA-512"
	}
	return ""
}

// openMetadataLog opens the log under dir with testChecks and the default
// snapshot interval.
func openMetadataLog(dir string, logger *slog.Logger) (*Log, *Image, error) {
	return OpenLog(dir, logger, LogOptions{Checks: testChecks{}})
}
