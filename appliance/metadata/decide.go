package metadata

// The controller's decisions that need no node: the records a change is
// made of, and checks against an image. Controller adds what needs the
// node (config defaults, directories) through its Host and commits under
// the Host's lock.

// CreateTopicRecords returns the records that create topic name with id:
// the topic, partitions [0, partitions) with node as their only replica,
// ISR and leader at leader epoch 0, and one ConfigRecord per override.
func CreateTopicRecords(name string, id TopicID, partitions, node int32, configs map[string]string) []Record {
	recs := make([]Record, 0, 1+int(partitions)+len(configs))
	recs = append(recs, Record{Topic: &TopicRecord{Name: name, ID: id}})
	recs = append(recs, AddPartitionRecords(id, 0, partitions, node)...)
	for k, v := range configs {
		v := v
		recs = append(recs, Record{Config: &ConfigRecord{ResourceType: 2, Name: name, Key: k, Value: &v}})
	}
	return recs
}

// AddPartitionRecords returns the records of partitions [from, to) of
// topic id, with node as their only replica, ISR and leader.
func AddPartitionRecords(id TopicID, from, to, node int32) []Record {
	var recs []Record
	for p := from; p < to; p++ {
		recs = append(recs, Record{Partition: &PartitionRecord{TopicID: id, Partition: p, Replicas: []int32{node},
			ISR: []int32{node}, Leader: node, LeaderEpoch: 0}})
	}
	return recs
}

// CollidingTopic returns a topic of im whose name differs from name only
// by '.' against '_' (they collide in metric names), or "".
func (im *Image) CollidingTopic(name string) string {
	norm := func(s string) string {
		out := []byte(s)
		for i := range out {
			if out[i] == '.' {
				out[i] = '_'
			}
		}
		return string(out)
	}
	n := norm(name)
	for other := range im.Topics {
		if other != name && norm(other) == n {
			return other
		}
	}
	return ""
}
