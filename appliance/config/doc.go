// Package config is the broker's configuration vocabulary, below every
// concept package: the Java properties parser (ParseProperties), the
// registry of known broker properties with the suggestion of the closest
// known name for a misspelt one (Keys, UnknownKeys), Kafka's broker-level
// defaults (BrokerDefaults), the listeners (ParseListeners) with their
// TLS settings and ssl.principal.mapping.rules (tls.go, principal.go:
// ListenerTLS, PrincipalRules), the cluster
// section with Kafka's KRaft names and rules (ParseCluster: process.roles,
// controller.quorum.voters, controller listeners, broker.rack, membership
// timeouts), and the topic configs with their defaults, validation and
// typed form (TopicDefs, ValidateTopic, Topic), and Recompressors, which
// applies a topic's compression.type to produced batches.
//
// It imports no concept package and not appliance: concept packages may
// import it to parse their own sections, and appliance assembles the typed
// broker Config from the sections (appliance.ConfigFromProperties). Keys
// that a concept package owns (the GROUP configs) are passed in by the
// caller as extra Keys. Nothing here holds package-level mutable state (a Recompressors
// pools its encoders per instance).
package config
