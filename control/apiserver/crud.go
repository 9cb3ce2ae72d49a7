package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/control/storage"
)

// maxConflictRetries bounds retries of unconditional writes that race other writers.
const maxConflictRetries = 8

func (s *Server) groupResource(r *Resource) (gr schemaGR) {
	return schemaGroupResource(r.GroupVersion.Group, r.Plural)
}

func (s *Server) get(w http.ResponseWriter, req *http.Request, r *Resource, info requestInfo) {
	var obj runtime.Object
	var err error
	if req.URL.Query().Get("resourceVersion") == "0" {
		// Any version will do: the latest this server has seen, from memory when it
		// has it (see latestRevisions).
		obj, err = s.readAnyVersion(req.Context(), r, info)
	} else {
		obj, err = s.readShared(req.Context(), r, info)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	format, err := responseFormatFor(req, r, shapeObject)
	if err != nil {
		writeError(w, err)
		return
	}
	if format == formatTable {
		t, err := buildTable(r, []runtime.Object{obj}, s.cfg.Clock.Now(), req.URL.Query().Get("includeObject"), metav1.ListMeta{})
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, t)
		return
	}
	writeObject(w, format, http.StatusOK, r, obj)
}

// readAnyVersion is read for resourceVersion=0: the cached object when it is the
// latest the server knows of, else a read from etcd.
func (s *Server) readAnyVersion(ctx context.Context, r *Resource, info requestInfo) (runtime.Object, error) {
	if obj, ok := s.current(r.key(info.namespace, info.name)); ok {
		return obj, nil
	}
	return s.readShared(ctx, r, info)
}

// readShared is read for a caller that only encodes the object: it may be the object
// cache's own (see objectCache.view), so it must not be changed.
func (s *Server) readShared(ctx context.Context, r *Resource, info requestInfo) (runtime.Object, error) {
	kv, err := s.cfg.Store.Get(ctx, r.key(info.namespace, info.name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierrors.NewNotFound(s.groupResource(r), info.name)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	obj, err := s.decodeShared(r, kv)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return obj, nil
}

// read fetches the stored object a request names.
func (s *Server) read(ctx context.Context, r *Resource, info requestInfo) (runtime.Object, storage.KV, error) {
	kv, err := s.cfg.Store.Get(ctx, r.key(info.namespace, info.name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, kv, apierrors.NewNotFound(s.groupResource(r), info.name)
	}
	if err != nil {
		return nil, kv, apierrors.NewInternalError(err)
	}
	obj, err := s.decode(r, kv)
	if err != nil {
		return nil, kv, apierrors.NewInternalError(err)
	}
	return obj, kv, nil
}

func (s *Server) readBody(w http.ResponseWriter, req *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", s.cfg.MaxBodyBytes))
		}
		return nil, apierrors.NewBadRequest("reading body: " + err.Error())
	}
	return body, nil
}

// readWrite reads what a create or update sends: the write options and the object in
// the body. It answers the request itself, and returns false, when either is bad.
func (s *Server) readWrite(w http.ResponseWriter, req *http.Request, r *Resource) (writeOptions, runtime.Object, bool) {
	opts, body, ok := s.readOptionsAndBody(w, req)
	if !ok {
		return opts, nil, false
	}
	obj, warnings, err := decodeBody(r, req, body, opts.fieldValidation)
	if err != nil {
		writeError(w, err)
		return opts, nil, false
	}
	addWarnings(w, warnings)
	return opts, obj, true
}

// readOptionsAndBody reads the write options and the raw body of a write, answering the
// request itself, and returning false, when either is bad.
func (s *Server) readOptionsAndBody(w http.ResponseWriter, req *http.Request) (writeOptions, []byte, bool) {
	opts, err := parseWriteOptions(req)
	if err != nil {
		writeError(w, err)
		return opts, nil, false
	}
	body, err := s.readBody(w, req)
	if err != nil {
		writeError(w, err)
		return opts, nil, false
	}
	return opts, body, true
}

// writeOptions are the query parameters every write takes.
type writeOptions struct {
	dryRun          bool
	fieldValidation string
}

func parseWriteOptions(req *http.Request) (writeOptions, error) {
	q := req.URL.Query()
	var o writeOptions
	for _, d := range q["dryRun"] {
		if d != "All" {
			return o, apierrors.NewBadRequest(fmt.Sprintf("dryRun %q is not supported: the only value is All", d))
		}
		o.dryRun = true
	}
	o.fieldValidation = q.Get("fieldValidation")
	switch o.fieldValidation {
	case "":
		o.fieldValidation = fieldValidationWarn
	case fieldValidationStrict, fieldValidationWarn, fieldValidationIgnore:
	default:
		return o, apierrors.NewBadRequest(fmt.Sprintf("fieldValidation %q is not one of Strict, Warn, Ignore", o.fieldValidation))
	}
	return o, nil
}

func addWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		w.Header().Add("Warning", "299 - "+strconv.Quote(msg))
	}
}

func (s *Server) create(w http.ResponseWriter, req *http.Request, r *Resource, info requestInfo) {
	if info.subresource != "" {
		writeError(w, apierrors.NewMethodNotSupported(s.groupResource(r), "create"))
		return
	}
	if r.Namespaced && info.namespace == "" {
		writeError(w, apierrors.NewBadRequest("a namespaced object is created under /namespaces/NAMESPACE/"))
		return
	}
	format, err := objectFormat(req, r)
	if err != nil {
		writeError(w, err)
		return
	}
	opts, obj, ok := s.readWrite(w, req, r)
	if !ok {
		return
	}
	created, err := s.createObject(req.Context(), r, info.namespace, obj, opts.dryRun)
	if err != nil {
		writeError(w, err)
		return
	}
	writeObject(w, format, http.StatusCreated, r, created)
}

// createObject fills in server-owned metadata, defaults, validates and stores obj.
func (s *Server) createObject(ctx context.Context, r *Resource, namespace string, obj runtime.Object, dryRun bool) (runtime.Object, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if r.Namespaced {
		if ns := acc.GetNamespace(); ns != "" && ns != namespace {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", ns, namespace))
		}
		acc.SetNamespace(namespace)
	} else {
		acc.SetNamespace("")
	}
	if acc.GetName() == "" && acc.GetGenerateName() != "" {
		acc.SetName(acc.GetGenerateName() + rand.String(5))
	}
	acc.SetUID(uuid.NewUUID())
	acc.SetCreationTimestamp(metav1.NewTime(s.cfg.Clock.Now().Truncate(1e9)))
	acc.SetGeneration(1)
	acc.SetResourceVersion("")
	acc.SetDeletionTimestamp(nil)
	acc.SetDeletionGracePeriodSeconds(nil)
	if r.Default != nil {
		r.Default(obj)
	}
	if errs := s.validateCreate(r, obj, acc); len(errs) > 0 {
		return nil, apierrors.NewInvalid(r.GroupVersionKind().GroupKind(), acc.GetName(), errs)
	}
	if r.Namespaced {
		if err := s.checkNamespace(ctx, namespace); err != nil {
			return nil, err
		}
	}
	if err := s.admit(ctx, obj, nil); err != nil {
		return nil, err
	}
	if dryRun {
		return obj, nil
	}
	if r.BeforeCreate != nil {
		if err := r.BeforeCreate(ctx, obj); err != nil {
			return nil, err
		}
	}
	rev, err := s.store(ctx, r, acc, obj)
	if err != nil {
		if r.Release != nil {
			r.Release(ctx, obj)
		}
		return nil, err
	}
	setResourceVersion(obj, rev)
	return obj, nil
}

// store writes a new object, with its lifetime when the resource gives one.
func (s *Server) store(ctx context.Context, r *Resource, acc metav1.Object, obj runtime.Object) (int64, error) {
	data, err := toStorage(r, obj)
	if err != nil {
		return 0, apierrors.NewInternalError(err)
	}
	var ttl time.Duration
	if r.TTL != nil {
		ttl = r.TTL(obj)
	}
	key := r.key(acc.GetNamespace(), acc.GetName())
	rev, err := s.cfg.Store.CreateWithTTL(ctx, key, data, ttl)
	if errors.Is(err, storage.ErrExists) {
		return 0, apierrors.NewAlreadyExists(s.groupResource(r), acc.GetName())
	}
	if err != nil {
		return 0, apierrors.NewInternalError(err)
	}
	s.remember(r, key, rev, data)
	return rev, nil
}

func (s *Server) validateCreate(r *Resource, obj runtime.Object, acc metav1.Object) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaAccessor(acc, r.Namespaced, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	if r.Validate != nil {
		errs = append(errs, r.Validate(obj)...)
	}
	return errs
}

func (s *Server) update(w http.ResponseWriter, req *http.Request, r *Resource, info requestInfo) {
	format, err := objectFormat(req, r)
	if err != nil {
		writeError(w, err)
		return
	}
	opts, obj, ok := s.readWrite(w, req, r)
	if !ok {
		return
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	if err := checkIdentity(r, info, acc); err != nil {
		writeError(w, err)
		return
	}
	// A resourceVersion that does not parse is left for the update to refuse.
	expect, _ := strconv.ParseInt(acc.GetResourceVersion(), 10, 64)
	out, created, err := s.guaranteedUpdate(req.Context(), r, info, opts.dryRun, expect, func(old runtime.Object) (runtime.Object, error) {
		return obj.DeepCopyObject(), nil
	})
	if err != nil {
		writeError(w, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	writeObject(w, format, code, r, out)
}

// checkIdentity refuses a body whose name or namespace disagrees with the URL, and fills
// them in when the body leaves them empty.
func checkIdentity(r *Resource, info requestInfo, acc metav1.Object) error {
	if acc.GetName() == "" {
		acc.SetName(info.name)
	}
	if acc.GetName() != info.name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", acc.GetName(), info.name))
	}
	if r.Namespaced {
		if acc.GetNamespace() == "" {
			acc.SetNamespace(info.namespace)
		}
		if acc.GetNamespace() != info.namespace {
			return apierrors.NewBadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace on the URL (%s)", acc.GetNamespace(), info.namespace))
		}
	}
	return nil
}

// mutateFunc produces the desired object from the stored one. It runs again when a
// concurrent writer wins the race, unless the result carries a resourceVersion, which
// then must match the stored one (optimistic concurrency).
type mutateFunc func(old runtime.Object) (runtime.Object, error)

// guaranteedUpdate reads, mutates, validates and writes with a compare-and-swap on the
// etcd revision. created is true when the object did not exist and the resource allows
// create on update.
//
// expect, when not 0, is the resourceVersion the request's object carries. If the
// object cache holds the object at that revision, the first attempt starts from the
// cached copy instead of reading etcd: the write's compare-and-swap on the revision
// still decides, and any failure of that attempt falls back to a fresh read, so the
// outcome is the same as without the cache.
func (s *Server) guaranteedUpdate(ctx context.Context, r *Resource, info requestInfo, dryRun bool, expect int64, mutate mutateFunc) (runtime.Object, bool, error) {
	gr := s.groupResource(r)
	optimistic := false
	for attempt := 0; ; attempt++ {
		var old runtime.Object
		var kv storage.KV
		var err error
		if cached, ok := s.cachedForUpdate(r, info, attempt, dryRun, expect); ok {
			old, kv, optimistic = cached, storage.KV{Key: r.key(info.namespace, info.name), Revision: expect}, true
		} else {
			optimistic = false
			old, kv, err = s.read(ctx, r, info)
		}
		if apierrors.IsNotFound(err) && r.AllowCreateOnUpdate && info.subresource == "" {
			obj, err := mutate(nil)
			if err != nil {
				return nil, false, err
			}
			created, err := s.createObject(ctx, r, info.namespace, obj, dryRun)
			return created, err == nil, err
		}
		if err != nil {
			return nil, false, err
		}
		obj, err := mutate(old.DeepCopyObject())
		if err != nil {
			return nil, false, err
		}
		acc, err := meta.Accessor(obj)
		if err != nil {
			return nil, false, apierrors.NewInternalError(err)
		}
		conditional := acc.GetResourceVersion() != ""
		if conditional && acc.GetResourceVersion() != strconv.FormatInt(kv.Revision, 10) {
			return nil, false, conflict(gr, info.name)
		}
		// An unconditional update writes over what it just read.
		acc.SetResourceVersion(strconv.FormatInt(kv.Revision, 10))
		obj, err = s.prepareUpdate(ctx, r, info, obj, old)
		if err != nil {
			return nil, false, err
		}
		if dryRun {
			return obj, false, nil
		}
		if r.BeforeUpdate != nil {
			if err := r.BeforeUpdate(ctx, obj, old); err != nil {
				return nil, false, err
			}
		}
		out, err := s.writeUpdate(ctx, r, info, obj, kv.Revision)
		if err == nil && r.AfterUpdate != nil {
			r.AfterUpdate(ctx, out, old)
		}
		if optimistic && (errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound)) {
			// The cached revision is no longer current: decide on a fresh read.
			continue
		}
		if errors.Is(err, storage.ErrConflict) {
			if conditional || attempt >= maxConflictRetries {
				return nil, false, conflict(gr, info.name)
			}
			continue
		}
		if errors.Is(err, storage.ErrNotFound) {
			return nil, false, apierrors.NewNotFound(gr, info.name)
		}
		return out, false, err
	}
}

// cachedForUpdate returns the cached object an update may start from: only on the first
// attempt, only for a request that names the revision it expects, only at that revision,
// and never for a dry run, which has no write to catch a stale revision.
func (s *Server) cachedForUpdate(r *Resource, info requestInfo, attempt int, dryRun bool, expect int64) (runtime.Object, bool) {
	if attempt != 0 || dryRun || expect <= 0 {
		return nil, false
	}
	return s.objects.get(r.key(info.namespace, info.name), expect)
}

func conflict(gr schemaGR, name string) error {
	return apierrors.NewConflict(gr, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// prepareUpdate keeps what a client may not change through this endpoint, bumps the
// generation when the spec changed, defaults and validates.
func (s *Server) prepareUpdate(ctx context.Context, r *Resource, info requestInfo, obj, old runtime.Object) (runtime.Object, error) {
	var err error
	switch {
	case info.subresource == "status":
		// Only status changes through /status; everything else stays as stored.
		obj, err = withStatusOf(r, old, obj)
	case r.HasStatus:
		// Status changes only through /status.
		obj, err = withStatusOf(r, obj, old)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	acc, _ := meta.Accessor(obj)
	oldAcc, _ := meta.Accessor(old)
	acc.SetUID(oldAcc.GetUID())
	acc.SetCreationTimestamp(oldAcc.GetCreationTimestamp())
	acc.SetDeletionTimestamp(oldAcc.GetDeletionTimestamp())
	acc.SetDeletionGracePeriodSeconds(oldAcc.GetDeletionGracePeriodSeconds())
	acc.SetNamespace(oldAcc.GetNamespace())
	acc.SetGeneration(oldAcc.GetGeneration())
	if info.subresource == "" {
		changed, err := specChanged(obj, old)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if changed {
			acc.SetGeneration(oldAcc.GetGeneration() + 1)
		}
	}
	if r.Default != nil {
		r.Default(obj)
	}
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(acc, oldAcc, field.NewPath("metadata"))
	errs = append(errs, s.validateCreate(r, obj, acc)...)
	if r.ValidateUpdate != nil {
		errs = append(errs, r.ValidateUpdate(obj, old)...)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(r.GroupVersionKind().GroupKind(), acc.GetName(), errs)
	}
	if err := s.admit(ctx, obj, old); err != nil {
		return nil, err
	}
	return obj, nil
}

// writeUpdate stores obj if the stored revision is still expect. An object being deleted
// whose last finalizer was just removed is deleted instead.
func (s *Server) writeUpdate(ctx context.Context, r *Resource, info requestInfo, obj runtime.Object, expect int64) (runtime.Object, error) {
	acc, _ := meta.Accessor(obj)
	key := r.key(info.namespace, info.name)
	// An object being deleted goes once no finalizer holds it and its grace period was
	// zero (a graceful deletion waits for its owner, a node, to confirm with grace 0).
	if acc.GetDeletionTimestamp() != nil && len(acc.GetFinalizers()) == 0 && zeroGrace(acc.GetDeletionGracePeriodSeconds()) {
		rev, err := s.cfg.Store.Delete(ctx, key, expect)
		if err != nil {
			return nil, err
		}
		s.objects.forget(key)
		setResourceVersion(obj, rev)
		if r.Release != nil {
			r.Release(ctx, obj)
		}
		return obj, nil
	}
	data, err := toStorage(r, obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	rev, _, err := s.cfg.Store.Update(ctx, key, data, expect)
	if err != nil {
		return nil, err
	}
	s.remember(r, key, rev, data)
	setResourceVersion(obj, rev)
	return obj, nil
}

func (s *Server) delete(w http.ResponseWriter, req *http.Request, r *Resource, info requestInfo) {
	if info.subresource != "" {
		writeError(w, apierrors.NewMethodNotSupported(s.groupResource(r), "delete"))
		return
	}
	format, err := objectFormat(req, r)
	if err != nil {
		writeError(w, err)
		return
	}
	opts, err := parseDeleteOptions(w, req, s)
	if err != nil {
		writeError(w, err)
		return
	}
	obj, code, err := s.deleteObject(req.Context(), r, info.namespace, info.name, opts)
	if err != nil {
		writeError(w, err)
		return
	}
	writeObject(w, format, code, r, obj)
}

// Finalizers the garbage collector acts on, set by DELETE's propagationPolicy.
const (
	finalizerOrphan     = metav1.FinalizerOrphanDependents
	finalizerForeground = metav1.FinalizerDeleteDependents
)

// deleteObject deletes with Kubernetes' semantics: preconditions; a propagation policy
// of Orphan or Foreground adds its finalizer; finalizers or a grace period leave the
// object marked with deletionTimestamp for their owners to finish; otherwise it is
// removed. The status code is 200 when the object is gone and 202 when it is marked.
func (s *Server) deleteObject(ctx context.Context, r *Resource, namespace, name string, opts metav1.DeleteOptions) (runtime.Object, int, error) {
	gr := s.groupResource(r)
	info := requestInfo{namespace: namespace, name: name}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground, metav1.DeletePropagationBackground:
		default:
			return nil, 0, apierrors.NewBadRequest(fmt.Sprintf("propagationPolicy %q is not Orphan, Foreground or Background", *p))
		}
	}
	for attempt := 0; ; attempt++ {
		obj, kv, err := s.read(ctx, r, info)
		if err != nil {
			return nil, 0, err
		}
		acc, _ := meta.Accessor(obj)
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && *p.UID != acc.GetUID() {
				return nil, 0, apierrors.NewConflict(gr, name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, acc.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != acc.GetResourceVersion() {
				return nil, 0, apierrors.NewConflict(gr, name, fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, acc.GetResourceVersion()))
			}
		}
		if err := s.admit(ctx, nil, obj); err != nil {
			return nil, 0, err
		}
		marked, changed := s.markForDeletion(r, obj, opts)
		if len(opts.DryRun) > 0 {
			return obj, http.StatusOK, nil
		}
		if marked {
			if !changed {
				return obj, http.StatusAccepted, nil
			}
			out, err := s.writeUpdate(ctx, r, info, obj, kv.Revision)
			if errors.Is(err, storage.ErrConflict) && attempt < maxConflictRetries {
				continue
			}
			if err != nil {
				return nil, 0, storageError(gr, name, err)
			}
			return out, http.StatusAccepted, nil
		}
		rev, err := s.cfg.Store.Delete(ctx, r.key(namespace, name), kv.Revision)
		if errors.Is(err, storage.ErrConflict) && attempt < maxConflictRetries {
			continue
		}
		if err != nil {
			return nil, 0, storageError(gr, name, err)
		}
		s.objects.forget(r.key(namespace, name))
		setResourceVersion(obj, rev)
		if r.Release != nil {
			r.Release(ctx, obj)
		}
		return obj, http.StatusOK, nil
	}
}

// markForDeletion decides whether a DELETE only marks obj (finalizers or a grace
// period remain) and applies the marks. changed is false when obj already carried
// them, so nothing needs writing.
func (s *Server) markForDeletion(r *Resource, obj runtime.Object, opts metav1.DeleteOptions) (marked, changed bool) {
	acc, _ := meta.Accessor(obj)
	finalizers := acc.GetFinalizers()
	if p := opts.PropagationPolicy; p != nil && *p != metav1.DeletePropagationBackground {
		want, other := finalizerOrphan, finalizerForeground
		if *p == metav1.DeletePropagationForeground {
			want, other = finalizerForeground, finalizerOrphan
		}
		var out []string
		for _, f := range finalizers {
			if f != other && f != want {
				out = append(out, f)
			}
		}
		out = append(out, want)
		if fmt.Sprint(out) != fmt.Sprint(finalizers) {
			acc.SetFinalizers(out)
			changed = true
		}
		finalizers = out
	}
	var grace int64
	if r.GracePeriod != nil {
		grace = r.GracePeriod(obj, opts.GracePeriodSeconds)
	}
	if grace <= 0 && len(finalizers) == 0 {
		return false, false
	}
	now := s.cfg.Clock.Now().Truncate(time.Second)
	if ts := acc.GetDeletionTimestamp(); ts == nil {
		t := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
		acc.SetDeletionTimestamp(&t)
		acc.SetDeletionGracePeriodSeconds(&grace)
		changed = true
	} else if cur := acc.GetDeletionGracePeriodSeconds(); grace > 0 && (cur == nil || grace < *cur) {
		// A second DELETE may shorten the grace period, never lengthen it.
		t := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
		acc.SetDeletionTimestamp(&t)
		acc.SetDeletionGracePeriodSeconds(&grace)
		changed = true
	}
	if grace <= 0 && len(finalizers) > 0 {
		zero := int64(0)
		if cur := acc.GetDeletionGracePeriodSeconds(); cur == nil || *cur != 0 {
			acc.SetDeletionGracePeriodSeconds(&zero)
			changed = true
		}
	}
	if grace <= 0 && len(finalizers) == 0 {
		return false, false
	}
	return true, changed
}

func zeroGrace(g *int64) bool { return g == nil || *g == 0 }

func storageError(gr schemaGR, name string, err error) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return conflict(gr, name)
	}
	return err
}

// parseDeleteOptions reads DeleteOptions from the body, if any, and the query.
func parseDeleteOptions(w http.ResponseWriter, req *http.Request, s *Server) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	body, err := s.readBody(w, req)
	if err != nil {
		return opts, err
	}
	if len(body) > 0 {
		var err error
		if mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mt == protobufContentType {
			_, _, err = protobufCodec.Decode(body, nil, &opts)
		} else {
			err = json.Unmarshal(body, &opts)
		}
		if err != nil {
			return opts, apierrors.NewBadRequest("decoding DeleteOptions: " + err.Error())
		}
	}
	q := req.URL.Query()
	if v := q["dryRun"]; len(v) > 0 {
		opts.DryRun = v
	}
	for _, d := range opts.DryRun {
		if d != "All" {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("dryRun %q is not supported: the only value is All", d))
		}
	}
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	if v := q.Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("gracePeriodSeconds %q is not an integer", v))
		}
		opts.GracePeriodSeconds = &n
	}
	return opts, nil
}
