package broker

// connection_creation_rate of ip quota entities: the wire layer's accept loop
// (wire/conn_ip_rate.go) asks IPConnectionCreationRate for each new connection's bound.

import (
	"net/netip"

	"sluice/controller"
)

// IPConnectionCreationRate returns the connection_creation_rate quota for addr from the
// metadata image, as Kafka's ConnectionQuotas resolves it: the address's own ip entity, else
// the default ip entity; ok is false when neither sets one. Safe for concurrent use.
func (b *Broker) IPConnectionCreationRate(addr netip.Addr) (rate float64, ok bool) {
	return ipConnectionCreationRate(b.ctrl.Image(), addr)
}

func ipConnectionCreationRate(im *controller.Image, addr netip.Addr) (float64, bool) {
	if len(im.Quotas) == 0 {
		return 0, false
	}
	addr = addr.Unmap()
	var byDefault float64
	haveDefault := false
	for e, keys := range im.Quotas {
		if !e.IP.Set {
			continue
		}
		v, found := keys[controller.QuotaConnectionCreationRate]
		if !found {
			continue
		}
		if e.IP.Default {
			byDefault, haveDefault = v, true
			continue
		}
		// Names are stored as written (ParseQuotaEntity checked they are addresses);
		// compared as addresses, so ::1 and 0:0::1 are one.
		if a, err := netip.ParseAddr(e.IP.Name); err == nil && a.Unmap() == addr {
			return v, true
		}
	}
	return byDefault, haveDefault
}
