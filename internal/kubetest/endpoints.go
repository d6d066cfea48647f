//go:build kube

package kubetest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// managedBy is the EndpointSlices' endpointslice.kubernetes.io/managed-by.
const managedBy = "kubetest.bulkheadlab.dev"

// watchServices makes the controller sync every Service (see
// syncService) when it or a pod of its namespace changes.
func (c *Controller) watchServices() error {
	inf := c.factory.Core().V1().Services().Informer()
	add := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if s, ok := obj.(*corev1.Service); ok {
			c.queue.Add(key{"service", s.Namespace, s.Name})
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }, DeleteFunc: add})
	c.services = inf.GetIndexer()
	return err
}

// enqueueServices queues every Service of namespace ns.
func (c *Controller) enqueueServices(ns string) {
	objs, _ := c.services.ByIndex(cache.NamespaceIndex, ns)
	for _, o := range objs {
		s := o.(*corev1.Service)
		c.queue.Add(key{"service", s.Namespace, s.Name})
	}
}

// syncService keeps the EndpointSlice named after a Service with a
// selector: one endpoint per pod of the namespace that matches, has an
// IP and is not being deleted (ready as the pod is), the Service's ports
// resolved to the pods' (a named targetPort through the first pod's
// container ports). A Service that is gone loses its slice (envtest has
// no garbage collector); a Service without a selector is left alone.
func (c *Controller) syncService(ctx context.Context, k key) error {
	slices := c.client.DiscoveryV1().EndpointSlices(k.namespace)
	obj, exists, err := c.services.GetByKey(k.namespace + "/" + k.name)
	if err != nil {
		return err
	}
	if !exists {
		err := slices.Delete(ctx, k.name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	svc := obj.(*corev1.Service)
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	objs, _ := c.pods.ByIndex(cache.NamespaceIndex, k.namespace)
	want := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: svc.Name, Namespace: svc.Namespace,
			Labels:          map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: managedBy},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	var first *corev1.Pod
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if first == nil {
			first = p
		}
		r := ready(p)
		node := p.Spec.NodeName
		want.Endpoints = append(want.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{p.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: &r, Serving: &r, Terminating: new(false)},
			NodeName:   &node,
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		})
	}
	for _, sp := range svc.Spec.Ports {
		port := sp.TargetPort.IntVal
		if sp.TargetPort.StrVal != "" {
			port = 0
			if first != nil {
				for _, ct := range first.Spec.Containers {
					for _, cp := range ct.Ports {
						if cp.Name == sp.TargetPort.StrVal {
							port = cp.ContainerPort
						}
					}
				}
			}
		} else if port == 0 {
			port = sp.Port
		}
		if port == 0 {
			continue
		}
		want.Ports = append(want.Ports, discoveryv1.EndpointPort{Name: new(sp.Name), Protocol: new(sp.Protocol), Port: new(port)})
	}
	have, err := slices.Get(ctx, svc.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = slices.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(have.Endpoints, want.Endpoints) && equality.Semantic.DeepEqual(have.Ports, want.Ports) {
		return nil
	}
	want.ResourceVersion = have.ResourceVersion
	_, err = slices.Update(ctx, want, metav1.UpdateOptions{})
	return err
}
