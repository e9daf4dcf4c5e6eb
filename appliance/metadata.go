package appliance

// Metadata (key 3), v0-v12.
//
// The brokers and controller id (v1+) of metadata.ClientBrokers (a single
// node: ourselves, as advertised on the listener the request came in on,
// Kafka's per-listener-name answer, our own controller), the cluster id
// (v2+), and the requested topics: null means all
// (v1+; in v0 an empty list means all). Unknown topics are created when
// auto.create.topics.enable is on and the request allows it (v4+ flag;
// always in v0-v3). Creation is synchronous, but, as in Kafka, the answer
// that created a topic carries LEADER_NOT_AVAILABLE (5) and no partitions;
// the client's retry finds them. Invalid names get INVALID_TOPIC_EXCEPTION (17). v10+
// carries topic ids and v12 may ask by id (UNKNOWN_TOPIC_ID if absent).

import (
	"errors"
	"slices"

	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var metadataAPI = apiDef{key: 3, min: 0, max: 12, handle: handleMetadata}

func handleMetadata(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.MetadataRequest)
	im := b.currentImage()
	needsCreate := false
	autoCreate := b.cfg.AutoCreateTopics && (r.Version < 4 || req.AllowAutoTopicCreation)
	if autoCreate && req.Topics != nil {
		for _, t := range req.Topics {
			if t.Topic != nil && im.Topics[*t.Topic] == nil && validTopicName(*t.Topic) == nil && !b.metadataTopicDenied(r, req, *t.Topic, false) {
				needsCreate = true
			}
		}
	}
	if !needsCreate {
		return buildMetadata(b, r, req, nil)
	}
	return wire.Deferred(func() any {
		created := map[string]error{}
		for _, t := range req.Topics {
			if t.Topic == nil || validTopicName(*t.Topic) != nil || b.metadataTopicDenied(r, req, *t.Topic, false) {
				continue
			}
			if b.currentImage().Topics[*t.Topic] != nil {
				continue
			}
			_, err := b.createTopic(TopicSpec{Name: *t.Topic, Partitions: -1, ReplicationFactor: -1}, false)
			switch {
			case err == nil:
				// As Kafka: the request that creates a topic gets
				// LEADER_NOT_AVAILABLE and no partitions; clients retry.
				created[*t.Topic] = kerr.LeaderNotAvailable
			case !errors.Is(err, kerr.TopicAlreadyExists):
				created[*t.Topic] = err
			}
		}
		return buildMetadata(b, r, req, created)
	})
}

func buildMetadata(b *Broker, r *wire.Request, req *kmsg.MetadataRequest, createErrs map[string]error) kmsg.Response {
	im := b.currentImage()
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Brokers, resp.ControllerID = metadata.MetadataBrokers(im, r, b.cfg.NodeID, b.advertisedFor)
	cid := b.cfg.ClusterID
	resp.ClusterID = &cid

	all := req.Topics == nil || (r.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, name := range im.SortedTopicNames() {
			if name == metadataTopic || b.topicDenied(r, kmsg.ACLOperationDescribe, name) {
				continue
			}
			resp.Topics = append(resp.Topics, metadataTopicResp(b, im, im.Topics[name]))
		}
		return resp
	}
	for _, rt := range req.Topics {
		var t *TopicImage
		var name string
		switch {
		case rt.Topic != nil:
			name = *rt.Topic
			t = im.Topics[name]
		case rt.TopicID != [16]byte{}:
			t = im.TopicsByID[TopicID(rt.TopicID)]
			if t == nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				mt.AuthorizedOperations = -2147483648
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		}
		if n := name; t != nil && b.metadataTopicDenied(r, req, t.Name, true) || t == nil && b.metadataTopicDenied(r, req, n, false) {
			mt := kmsg.NewMetadataResponseTopic()
			if rt.Topic != nil {
				mt.Topic = &n
			} else {
				mt.TopicID = rt.TopicID
			}
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			mt.AuthorizedOperations = -2147483648
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if t == nil || createErrs[name] != nil {
			mt := kmsg.NewMetadataResponseTopic()
			n := name
			mt.Topic = &n
			mt.AuthorizedOperations = -2147483648
			switch {
			case validTopicName(name) != nil:
				mt.ErrorCode = kerr.InvalidTopicException.Code
			case createErrs[name] != nil:
				mt.ErrorCode = wire.ErrCode(createErrs[name])
			default:
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, metadataTopicResp(b, im, t))
	}
	return resp
}

func metadataTopicResp(b *Broker, im *Image, t *TopicImage) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	mt.AuthorizedOperations = -2147483648
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Partition
		mp.Leader, mp.ErrorCode = im.ClientLeader(&p) // -1 and LEADER_NOT_AVAILABLE when its leader is fenced
		mp.LeaderEpoch = p.LeaderEpoch
		mp.Replicas = append([]int32(nil), p.Replicas...)
		mp.ISR = append([]int32(nil), p.ISR...)
		mp.OfflineReplicas = []int32{}
		if v := b.ctl.lm.viewOf(t.ID, p.Partition); p.Leader == b.cfg.NodeID && v != nil && v.offline.Load() {
			// An I/O error took this broker's replica offline (as a
			// failed log directory in Kafka): with no other leader the
			// partition reads as Kafka shows it then, leaderless.
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			mp.Leader = -1
			mp.OfflineReplicas = []int32{b.cfg.NodeID}
			mp.ISR = slices.DeleteFunc(mp.ISR, func(id int32) bool { return id == b.cfg.NodeID })
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
