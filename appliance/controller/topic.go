package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ringbroker/ringbroker/appliance/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateTopic creates spec's topic through the active controller, for
// what a broker creates itself (the coordinators' internal topics,
// auto-creation): run by local (metadata.Controller.CreateTopic) when
// this node leads, else forwarded as a CreateTopics request. It returns
// once the image in force (current) names the topic, which it then
// returns; a topic that exists already counts as created. It tries again
// while no controller is known or the one asked is no longer it, for at
// most timeout (<= 0: DefaultForwardTimeout); errors wrap Kafka codes.
func (q *Quorum) CreateTopic(spec metadata.TopicSpec, timeout time.Duration, local func(metadata.TopicSpec, bool) (*metadata.TopicImage, error), current func() *metadata.Image) (*metadata.TopicImage, error) {
	if timeout <= 0 {
		timeout = DefaultForwardTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		err := q.createTopicOnce(ctx, spec, local)
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			for {
				if t := current().Topics[spec.Name]; t != nil {
					return t, nil
				}
				if !sleep(ctx, 10*time.Millisecond) {
					return nil, fmt.Errorf("%w: topic %q created but not yet applied here", kerr.RequestTimedOut, spec.Name)
				}
			}
		}
		if !errors.Is(err, kerr.NotController) && !errors.Is(err, ErrNoController) && !errors.Is(err, errIsLeader) {
			return nil, err
		}
		if !sleep(ctx, 50*time.Millisecond) {
			return nil, fmt.Errorf("%w: cannot create topic %q: %v", kerr.NotController, spec.Name, err)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// createTopicOnce makes one attempt.
func (q *Quorum) createTopicOnce(ctx context.Context, spec metadata.TopicSpec, local func(metadata.TopicSpec, bool) (*metadata.TopicImage, error)) error {
	if q.IsLeader() {
		_, err := local(spec, false)
		return err
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = spec.Name, spec.Partitions, spec.ReplicationFactor
	for k, v := range spec.Configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	// The broker's own request: its principal is the broker's (Kafka's
	// brokers create internal topics as themselves, User:ANONYMOUS on
	// an unauthenticated inter-broker listener).
	f := &Forwarded{Principal: "User:ANONYMOUS", ClientID: fmt.Sprintf("ringbroker-%d", q.opts.NodeID), Key: 19, Version: 7, Req: req}
	resp, err := q.Forward(ctx, f)
	if err != nil {
		return err
	}
	cr, ok := resp.(*kmsg.CreateTopicsResponse)
	if !ok || len(cr.Topics) != 1 {
		return fmt.Errorf("%w: unexpected forwarded CreateTopics answer", kerr.UnknownServerError)
	}
	if err := kerr.ErrorForCode(cr.Topics[0].ErrorCode); err != nil {
		msg := ""
		if cr.Topics[0].ErrorMessage != nil {
			msg = *cr.Topics[0].ErrorMessage
		}
		return fmt.Errorf("%w: %s", err, msg)
	}
	return nil
}
