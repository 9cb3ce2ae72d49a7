package apiserver

import (
	"context"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// User is who made a request.
type User struct {
	Name   string
	Groups []string
}

// InGroup reports whether the user is in group g.
func (u User) InGroup(g string) bool {
	for _, x := range u.Groups {
		if x == g {
			return true
		}
	}
	return false
}

type userKey struct{}

func userFrom(ctx context.Context) User {
	u, _ := ctx.Value(userKey{}).(User)
	return u
}

func forbiddenStatus(a Attributes, msg string) metav1.Status {
	st := metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: msg,
	}
	if a.ResourceRequest() {
		st.Details = &metav1.StatusDetails{Name: a.Name, Group: a.Group, Kind: a.Resource}
	}
	return st
}

func schemaGroupResource(group, resource string) schema.GroupResource {
	return schema.GroupResource{Group: group, Resource: resource}
}

// schemaGR shortens the group-resource type in signatures.
type schemaGR = schema.GroupResource
