package appliance

// ApiVersions (key 18), v0-v4.
//
// Lists every API key we implement with the exact version range. A request
// with a version above ours is answered in v0 format with
// UNSUPPORTED_VERSION (35) and our ranges, so the client can retry with a
// version we speak (KIP-511). Produce is advertised from v0 as Kafka 4 does
// (KAFKA-18659) although v0-v2 requests are refused per partition.

import (
	"github.com/ringbroker/ringbroker/appliance/wire"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var apiVersionsAPI = apiDef{key: 18, min: 0, max: 4, handle: handleAPIVersions, unsupported: apiVersionsUnsupported}

// apiVersionsKeys lists our APIs; ConsumerGroupHeartbeat and
// ConsumerGroupDescribe only while group.coordinator.rebalance.protocols
// names "consumer".
func apiVersionsKeys(b *Broker) []kmsg.ApiVersionsResponseApiKey {
	var out []kmsg.ApiVersionsResponseApiKey
	consumer := b.cfg.groupConfig().ConsumerProtocol()
	for _, a := range b.front.apis.Sorted() {
		if (a.Key == 68 || a.Key == 69) && !consumer {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.AdvertisedMin(), a.Max
		out = append(out, k)
	}
	return out
}

func handleAPIVersions(b *Broker, r *wire.Request) any {
	req := r.Req.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if r.Version >= 3 && (!validClientSoftware(req.ClientSoftwareName) || !validClientSoftware(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ApiKeys = apiVersionsKeys(b)
		return resp
	}
	resp.ApiKeys = apiVersionsKeys(b)
	return resp
}

// validClientSoftware applies KIP-511's pattern [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?.
func validClientSoftware(s string) bool {
	if s == "" {
		return true // older clients send nothing
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	if !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func apiVersionsUnsupported(b *Broker, r *wire.Request) any {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = apiVersionsKeys(b)
	// The writer sets the response version to the request's; force v0 format.
	return &wire.FixedVersion{Resp: resp, Version: 0}
}
