package metadata

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func topics(ts ...*TopicImage) map[TopicID]*TopicImage {
	m := map[TopicID]*TopicImage{}
	for _, t := range ts {
		m[t.ID] = t
	}
	return m
}

func TestDiff(t *testing.T) {
	a := &TopicImage{Name: "a", ID: NewTopicID(), Partitions: make([]PartitionImage, 2), Configs: map[string]string{}}
	b := &TopicImage{Name: "b", ID: NewTopicID(), Partitions: make([]PartitionImage, 1), Configs: map[string]string{}}
	c := &TopicImage{Name: "c", ID: NewTopicID(), Partitions: make([]PartitionImage, 1), Configs: map[string]string{}}
	grown := &TopicImage{Name: "a", ID: a.ID, Partitions: make([]PartitionImage, 3), Configs: map[string]string{"retention.ms": "1"}}
	// b again under a new id: removed and added.
	b2 := &TopicImage{Name: "b", ID: NewTopicID(), Partitions: make([]PartitionImage, 1), Configs: map[string]string{}}
	d := Diff(topics(a, b, c), topics(grown, b2, c))
	var got []string
	for _, x := range d.Added {
		got = append(got, fmt.Sprintf("+%s/%d", x.Topic.Name, x.From))
	}
	for _, x := range d.Removed {
		got = append(got, "-"+x.Name)
	}
	for _, x := range d.Reconfigured {
		got = append(got, "~"+x.Name)
	}
	if s := strings.Join(got, " "); s != "+a/2 +b/0 -b ~a" {
		t.Fatalf("delta %q", s)
	}
	if !Diff(topics(a, c), topics(a, c)).Empty() {
		t.Fatal("delta between equal images is not empty")
	}
}

type recorder struct {
	name string
	out  *[]string
	err  error
}

func (r recorder) Publish(_, _ *Image, d *Delta) error {
	*r.out = append(*r.out, fmt.Sprintf("%s:publish:%d", r.name, len(d.Added)))
	return r.err
}

type preparer struct{ recorder }

func (p preparer) Prepare(_, _ *Image, d *Delta) { *p.out = append(*p.out, p.name+":prepare") }

func TestPublisherOrder(t *testing.T) {
	var out []string
	errFirst := errors.New("first")
	var p Publisher
	p.Register(preparer{recorder{name: "lm", out: &out, err: errFirst}})
	p.Register(recorder{name: "groups", out: &out, err: errors.New("second")})
	a := &TopicImage{Name: "a", ID: NewTopicID(), Partitions: make([]PartitionImage, 1)}
	im0 := NewImage(nil)
	im1 := &Image{Offset: 0, Topics: map[string]*TopicImage{"a": a}, TopicsByID: topics(a)}
	im2 := &Image{Offset: 1, Topics: im1.Topics, TopicsByID: im1.TopicsByID}
	var stored *Image
	store := func(im *Image) { stored = im; out = append(out, "store") }
	err := p.Publish(im0, im1, store)
	if !errors.Is(err, errFirst) {
		t.Fatalf("error %v, want the first listener's", err)
	}
	if s := strings.Join(out, " "); s != "lm:prepare store lm:publish:1 groups:publish:1" || stored != im1 {
		t.Fatalf("calls %q, stored %p want %p", s, stored, im1)
	}
	out = nil
	if err := p.Publish(im1, im2, store); err != nil || stored != im2 {
		t.Fatal(err)
	}
	if s := strings.Join(out, " "); s != "lm:prepare store" {
		t.Fatalf("calls for an empty delta %q", s)
	}
}

// TestDiffImagesConcepts: each record kind of another concept flags its
// part of the delta, and only that part.
func TestDiffImagesConcepts(t *testing.T) {
	name := "u"
	cases := []struct {
		rec  Record
		want string
	}{
		{Record{ACL: &AccessControlEntryRecord{ID: ACLID{1}, ACLBinding: ACLBinding{ResourceType: 2, ResourceName: "t", PatternType: 3, Principal: "User:a", Host: "*", Operation: 3, Permission: 3}}}, "acls"},
		{Record{UserScramCredential: &UserScramCredentialRecord{Name: "a", Mechanism: 1, Salt: []byte("s"), Iterations: 4096}}, "scram"},
		{Record{ClientQuota: &ClientQuotaRecord{Entity: []ClientQuotaEntityPart{{Type: "user", Name: &name}}, Key: "producer_byte_rate", Value: 10}}, "quotas"},
		{Record{ProducerIDs: &ProducerIDsRecord{BrokerID: 1, NextProducerID: 1000}}, "pids"},
	}
	flags := func(d *Delta) string {
		var s []string
		for _, f := range []struct {
			on   bool
			name string
		}{{d.ACLs, "acls"}, {d.Scram, "scram"}, {d.ClientQuotas, "quotas"}, {d.ProducerIDs, "pids"}} {
			if f.on {
				s = append(s, f.name)
			}
		}
		return strings.Join(s, ",")
	}
	im := NewImage(nil)
	for i, c := range cases {
		next, err := im.Apply(int64(i), []Record{c.rec})
		if err != nil {
			t.Fatal(err)
		}
		d := DiffImages(im, next)
		if got := flags(d); got != c.want || d.Empty() {
			t.Fatalf("record %d: delta flags %q (empty %v), want %q", i, got, d.Empty(), c.want)
		}
		if d := DiffImages(next, next); !d.Empty() {
			t.Fatalf("record %d: an image against itself flags %q", i, flags(d))
		}
		im = next
	}
	// A topic record flags none of them.
	next, err := im.Apply(9, []Record{{Topic: &TopicRecord{Name: "x", ID: NewTopicID()}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := flags(DiffImages(im, next)); got != "" {
		t.Fatalf("a topic record flags %q", got)
	}
}
