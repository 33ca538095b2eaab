package chartcheck

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Egress says whether np lets its pods open a connection to addr:port over
// proto, as a NetworkPolicy implementation decides for an address outside
// the cluster's pods: some egress rule allows the port, and has no peers
// (every destination) or an ipBlock holding addr and none of its excepts.
// Peers that select pods or namespaces match no such address.
func Egress(np *networkingv1.NetworkPolicy, addr netip.Addr, port int, proto corev1.Protocol) bool {
	for _, rule := range np.Spec.Egress {
		if !portAllowed(rule.Ports, port, proto) {
			continue
		}
		if len(rule.To) == 0 {
			return true
		}
		for _, peer := range rule.To {
			if peer.IPBlock != nil && inBlock(peer.IPBlock, addr) {
				return true
			}
		}
	}
	return false
}

func portAllowed(ports []networkingv1.NetworkPolicyPort, port int, proto corev1.Protocol) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		pp := corev1.ProtocolTCP
		if p.Protocol != nil {
			pp = *p.Protocol
		}
		if pp != proto {
			continue
		}
		if p.Port == nil {
			return true
		}
		lo := p.Port.IntValue()
		hi := lo
		if p.EndPort != nil {
			hi = int(*p.EndPort)
		}
		if port >= lo && port <= hi {
			return true
		}
	}
	return false
}

func inBlock(b *networkingv1.IPBlock, addr netip.Addr) bool {
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil || !cidr.Contains(addr) {
		return false
	}
	for _, e := range b.Except {
		if ex, err := netip.ParsePrefix(e); err == nil && ex.Contains(addr) {
			return false
		}
	}
	return true
}

// CheckIPBlocks checks what the API server would: every ipBlock's cidr and
// excepts are networks, and each except lies strictly inside its cidr.
func CheckIPBlocks(np *networkingv1.NetworkPolicy) error {
	var errs []error
	for i, rule := range np.Spec.Egress {
		for j, peer := range rule.To {
			b := peer.IPBlock
			if b == nil {
				continue
			}
			cidr, err := netip.ParsePrefix(b.CIDR)
			if err != nil || cidr.Masked() != cidr {
				errs = append(errs, fmt.Errorf("egress[%d].to[%d]: cidr %q is not a network", i, j, b.CIDR))
				continue
			}
			for _, e := range b.Except {
				ex, err := netip.ParsePrefix(e)
				switch {
				case err != nil || ex.Masked() != ex:
					errs = append(errs, fmt.Errorf("egress[%d].to[%d]: except %q is not a network", i, j, e))
				case ex.Addr().Is4() != cidr.Addr().Is4() || ex.Bits() <= cidr.Bits() || !cidr.Contains(ex.Addr()):
					errs = append(errs, fmt.Errorf("egress[%d].to[%d]: except %s is not strictly inside %s", i, j, e, b.CIDR))
				}
			}
		}
	}
	return errorsOf("NetworkPolicy "+np.Name, errs)
}
