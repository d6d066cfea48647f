//go:build kube

package nodetest

import (
	"context"
	"net"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// dnsServer is the cluster's DNS, in the test process: it answers A
// queries for <service>.<namespace>.svc.<domain> with the Service's
// cluster IP (an empty answer for AAAA), NXDOMAIN for every other name
// of the domain, and REFUSED for names outside it: it forwards nothing,
// so no query leaves the machine. UDP only (its answers are small).
type dnsServer struct {
	conn   net.PacketConn
	client kubernetes.Interface
	domain string // "cluster.local."
	done   chan struct{}
}

// serveDNS answers on addr ("10.244.0.1:0") until close.
func serveDNS(addr string, client kubernetes.Interface, domain string) (*dnsServer, error) {
	conn, err := net.ListenPacket("udp4", addr)
	if err != nil {
		return nil, err
	}
	s := &dnsServer{conn: conn, client: client, domain: strings.TrimSuffix(domain, ".") + ".", done: make(chan struct{})}
	go s.loop()
	return s, nil
}

// Port is the UDP port it answers on.
func (s *dnsServer) Port() int { return s.conn.LocalAddr().(*net.UDPAddr).Port }

func (s *dnsServer) close() error {
	err := s.conn.Close()
	<-s.done
	return err
}

func (s *dnsServer) loop() {
	defer close(s.done)
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if out := s.answer(buf[:n]); out != nil {
			_, _ = s.conn.WriteTo(out, from)
		}
	}
}

// answer is the response to query, nil when query is not one.
func (s *dnsServer) answer(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	resp := dnsmessage.Message{Header: dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired},
		Questions: []dnsmessage.Question{q}}
	name := strings.ToLower(q.Name.String())
	switch {
	case !strings.HasSuffix(name, "."+s.domain):
		resp.RCode = dnsmessage.RCodeRefused
	default:
		ip := s.lookup(strings.TrimSuffix(name, "."+s.domain))
		switch {
		case ip == nil:
			resp.RCode = dnsmessage.RCodeNameError
		case q.Type == dnsmessage.TypeA:
			var a [4]byte
			copy(a[:], ip.To4())
			resp.Answers = []dnsmessage.Resource{{
				Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5},
				Body:   &dnsmessage.AResource{A: a},
			}}
		}
	}
	out, err := resp.Pack()
	if err != nil {
		return nil
	}
	return out
}

// lookup is the cluster IP of "<service>.<namespace>.svc", nil if there
// is none.
func (s *dnsServer) lookup(rel string) net.IP {
	parts := strings.Split(rel, ".")
	if len(parts) != 3 || parts[2] != "svc" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	svc, err := s.client.CoreV1().Services(parts[1]).Get(ctx, parts[0], metav1.GetOptions{})
	if err != nil {
		return nil
	}
	ip := net.ParseIP(svc.Spec.ClusterIP).To4()
	return ip
}
