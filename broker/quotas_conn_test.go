package broker

import (
	"net/netip"
	"testing"

	"sluice/controller"
)

func TestIPConnectionCreationRateResolution(t *testing.T) {
	ip := func(name string) controller.QuotaEntity {
		return controller.QuotaEntity{IP: controller.QuotaName{Set: true, Name: name}}
	}
	def := controller.QuotaEntity{IP: controller.QuotaName{Set: true, Default: true}}
	key := controller.QuotaConnectionCreationRate
	im := &controller.Image{Quotas: map[controller.QuotaEntity]map[string]float64{}}
	if _, ok := ipConnectionCreationRate(im, netip.MustParseAddr("127.0.0.1")); ok {
		t.Fatal("a quota without any set")
	}
	im.Quotas[controller.QuotaEntity{ClientID: controller.QuotaName{Set: true, Default: true}}] = map[string]float64{key: 1}
	if _, ok := ipConnectionCreationRate(im, netip.MustParseAddr("127.0.0.1")); ok {
		t.Fatal("a client-id entity applied to an address")
	}
	im.Quotas[def] = map[string]float64{key: 5}
	im.Quotas[ip("127.0.0.1")] = map[string]float64{key: 2}
	im.Quotas[ip("0:0::1")] = map[string]float64{key: 3}
	im.Quotas[ip("10.0.0.9")] = map[string]float64{controller.QuotaProducerByteRate: 100}
	for addr, want := range map[string]float64{"127.0.0.1": 2, "::ffff:127.0.0.1": 2, "::1": 3, "10.0.0.1": 5, "10.0.0.9": 5} {
		if got, ok := ipConnectionCreationRate(im, netip.MustParseAddr(addr)); !ok || got != want {
			t.Errorf("%s: %v %v, want %v", addr, got, ok, want)
		}
	}
}
