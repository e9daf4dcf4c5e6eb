package appliance

import "testing"

// ApiVersions advertises the group APIs appliance/group registers, with
// their ranges (ConsumerGroupHeartbeat up to v1).
func TestGroupAPIsAdvertised(t *testing.T) {
	want := map[int16]int16{11: 9, 14: 5, 12: 4, 13: 5, 16: 5, 15: 5, 42: 2, 8: 9, 9: 9, 47: 0, 68: 1, 69: 1}
	for _, k := range apiVersionsKeys(&Broker{front: frontEnd{apis: newAPITable(&Broker{})}}) {
		if max, ok := want[k.ApiKey]; ok {
			if k.MaxVersion != max {
				t.Errorf("API %d advertised up to v%d, want v%d", k.ApiKey, k.MaxVersion, max)
			}
			delete(want, k.ApiKey)
		}
	}
	if len(want) != 0 {
		t.Fatalf("group APIs not advertised: %v", want)
	}
}
