// Package integration holds end-to-end tests that build the real ringbroker
// binary (tools/ringbroker), start it on a free 127.0.0.1 port and drive it with
// unmodified Kafka clients: franz-go, sarama, kcat (librdkafka) and
// confluent-kafka for Python.
//
// The harness (startBroker, brokerBinary) builds the binary once per test binary run,
// starts one broker process per test with the repository's
// config/server.properties plus --override flags, captures the broker's stderr
// to a file and prints its tail when a test fails.
//
// Environment:
//
//	RB_ENGINE      io.engine for every broker started (uring|netpoll)
//	RB_IO_MODE     log.io.mode (direct|buffered)
//	RB_SHARDS      shards
//	RB_BROKER_BIN  use this prebuilt binary instead of building one
//	CI             when set, tests fail instead of skipping if kcat or the
//	               Python client is missing
//
// Tests run one after another (no t.Parallel): CI has two cores and each test
// already loads them with a broker and a client.
package integration
