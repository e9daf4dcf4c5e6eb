// Package metrics owns a broker's metrics: one VictoriaMetrics Set per
// broker (never the package-global set, so several brokers can run in one
// process), served as Prometheus text on metrics.listener with /healthz
// and /readyz beside /metrics.
//
// Names follow ringbroker_<area>_<what>_<unit> and carry Kafka's meaning
// where Kafka has the metric:
//
//	ringbroker_topic_bytes_in_total{topic}        BrokerTopicMetrics BytesInPerSec (record batch bytes appended)
//	ringbroker_topic_messages_in_total{topic}     BrokerTopicMetrics MessagesInPerSec
//	ringbroker_topic_bytes_out_total{topic}       BrokerTopicMetrics BytesOutPerSec (record bytes in fetch responses)
//	ringbroker_request_total{api}                 RequestMetrics RequestsPerSec
//	ringbroker_request_errors_total{api,error}    RequestMetrics ErrorsPerSec (non-zero codes, top level and per partition)
//	ringbroker_request_duration_seconds{api}      RequestMetrics TotalTimeMs (dispatch to response ready), histogram
//	ringbroker_purgatory_produce_size             DelayedOperationPurgatory PurgatorySize, Produce (acks=all waiting for fdatasync)
//	ringbroker_purgatory_fetch_size               DelayedOperationPurgatory PurgatorySize, Fetch (parked long polls)
//	ringbroker_log_start_offset{topic,partition}  Log LogStartOffset
//	ringbroker_log_end_offset{topic,partition}    Log LogEndOffset
//	ringbroker_log_size_bytes{topic,partition}    Log Size
//	ringbroker_partitions_offline                 OfflinePartitionsCount (partitions offline after an I/O error)
//	ringbroker_metadata_log_offline               1 while a failed write keeps the metadata log from taking changes (metadata.Log)
//	ringbroker_log_flush_duration_seconds         LogFlushStats LogFlushRateAndTimeMs (append to fdatasync done), histogram
//	ringbroker_log_flush_windows_total{shard}     group-commit windows; ..._fsyncs_total, ..._fsync_requests_total, ..._fsync_failures_total
//	ringbroker_shard_busy_seconds_total{shard}    loop time spent running tasks: rate() is the loop utilisation (0..1)
//	ringbroker_shard_tasks_total{shard}           closures run by the loop
//	ringbroker_shard_queue_depth{shard}           closures waiting in the inbox
//	ringbroker_shard_fetch_reads_total{shard}     fetch passes that read partitions on the shard; passes answered from partition views do not count
//	ringbroker_fetch_tail_reads_total             fetched partitions with records read from their log's published tail on the fetch's own goroutine (log.io.tail.reads)
//	ringbroker_fetch_tail_misses_total            fetched partitions with records the tail could not answer (read on the owner shard)
//	ringbroker_network_connections                open client connections
//	ringbroker_network_connections_rejected_total{reason}  connections closed at accept by max.connections / max.connections.per.ip (Metrics.ConnRejected)
//	ringbroker_connection_warnings_suppressed_total      closed-connection warnings over the log's limit of 50 per 10 s (Metrics.ConnWarningSuppressed)
//	ringbroker_group_count{state}                 classic groups by state (GroupMetadataManager NumGroups*)
//	ringbroker_group_offsets_count                committed offsets held (GroupMetadataManager NumOffsets)
//	ringbroker_quota_throttle_time_seconds_total{type}  time Produce/Fetch responses were held by byte-rate quotas (ClientQuotaManager throttle-time, summed; quota.Manager)
//	ringbroker_quota_throttled_requests_total{type}     requests throttled by byte-rate quotas
//	ringbroker_log_cleaner_*_total                passes, bytes read and written, errors of the log cleaner (cleaner.Cleaner)
//
// Everything that lives on a shard (offsets, group state) is read at scrape
// time through the Source the broker gives New (one call per shard);
// counters bumped on the hot path are atomics behind pointers resolved
// without allocating.
//
// The package imports appliance/wire (the result types of handlers),
// nvme and ioring (their stats types) and nothing of appliance or of the
// concept packages. Metrics' methods are safe for concurrent use and are
// no-ops on a nil *Metrics.
package metrics
