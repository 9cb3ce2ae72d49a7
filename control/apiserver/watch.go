package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/plinth/plinth/control/storage"
)

// initialEventsEndAnnotation marks the bookmark that ends the initial events of a
// watch-list request (sendInitialEvents=true); client-go's reflector waits for it.
const initialEventsEndAnnotation = "k8s.io/initial-events-end"

// minWatchTimeout is kube-apiserver's --min-request-timeout: a watch without
// timeoutSeconds ends after a random time between it and twice it, so clients spread
// their reconnects.
const minWatchTimeout = 30 * time.Minute

func (s *Server) watch(w http.ResponseWriter, req *http.Request, r *Resource, info requestInfo) {
	s.watches.Add(1)
	defer s.watches.Done()
	// A watch asks for PartialObjectMetadata, the shape of each event's object.
	format, err := responseFormatFor(req, r, shapeObject)
	if err != nil {
		writeError(w, err)
		return
	}
	sel, err := parseSelector(r, req)
	if err != nil {
		writeError(w, err)
		return
	}
	q := req.URL.Query()
	rev, err := parseResourceVersion(q.Get("resourceVersion"))
	if err != nil {
		writeError(w, err)
		return
	}
	sendInitial := isTrue(q.Get("sendInitialEvents"))
	if q.Has("sendInitialEvents") && q.Get("resourceVersionMatch") != "NotOlderThan" {
		writeError(w, apierrors.NewBadRequest("sendInitialEvents needs resourceVersionMatch=NotOlderThan"))
		return
	}
	allowBookmarks := isTrue(q.Get("allowWatchBookmarks"))
	timeout := minWatchTimeout + time.Duration(rand.Int64N(int64(minWatchTimeout)))
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("timeoutSeconds %q is not a non-negative integer", v)))
			return
		}
		if n > 0 {
			timeout = time.Duration(n) * time.Second
		}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, apierrors.NewInternalError(errors.New("response writer cannot stream")))
		return
	}
	ctx, cancel := context.WithTimeout(req.Context(), timeout)
	defer cancel()

	// With no resourceVersion (or "0"), or with sendInitialEvents, the watch starts with
	// the current objects as ADDED events, read at one revision, and continues from it.
	var initial listed
	start := rev
	if sendInitial || rev == 0 {
		initial, err = s.listPage(ctx, r, info.namespace, sel, 0, storage.ListOptions{})
		if err != nil {
			writeError(w, err)
			return
		}
		start = initial.revision
	}
	enc := newWatchEncoder(w, flusher, r, format, q.Get("includeObject"), s.cfg.Clock.Now)
	events := s.cfg.Store.Watch(ctx, selectionPrefix(r, info.namespace, sel), start)

	w.Header().Set("Content-Type", enc.contentType())
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()

	for _, obj := range initial.objects {
		if enc.send(watch.Added, obj) != nil {
			return
		}
	}
	if sendInitial {
		if enc.bookmark(start, true) != nil {
			return
		}
	}
	s.streamEvents(ctx, enc, r, sel, events, start, allowBookmarks)
}

// streamEvents turns storage events into watch events until the context ends or the
// client goes away. An object that starts or stops matching the selectors is sent as
// ADDED or DELETED, as Kubernetes does.
func (s *Server) streamEvents(ctx context.Context, enc *watchEncoder, r *Resource, sel selector, events <-chan storage.Event, lastRev int64, allowBookmarks bool) {
	var bookmarks <-chan time.Time
	if allowBookmarks {
		t := time.NewTicker(s.cfg.BookmarkInterval)
		defer t.Stop()
		bookmarks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-bookmarks:
			if enc.bookmark(lastRev, false) != nil {
				return
			}
		case ev, ok := <-events:
			if !ok {
				return
			}
			if err := s.sendEvent(enc, r, sel, ev); err != nil {
				return
			}
			if ev.Revision > 0 {
				lastRev = ev.Revision
			}
		}
	}
}

var errWatchEnded = errors.New("watch ended")

func (s *Server) sendEvent(enc *watchEncoder, r *Resource, sel selector, ev storage.Event) error {
	switch ev.Type {
	case storage.EventProgress:
		return nil
	case storage.EventError:
		status := apierrors.NewInternalError(ev.Err).Status()
		if errors.Is(ev.Err, storage.ErrCompacted) {
			status = apierrors.NewResourceExpired("too old resource version: " + ev.Err.Error()).Status()
			s.metrics.watchExpired.WithLabelValues(r.Plural).Inc()
		}
		status.Kind, status.APIVersion = "Status", "v1"
		_ = enc.write(watch.Error, &status)
		return errWatchEnded
	}
	var prev runtime.Object
	// Without the previous object (its history was compacted) an update is taken to
	// have matched before, so it is sent as MODIFIED or, if it no longer matches, DELETED.
	prevMatch := ev.Type == storage.EventPut && !ev.Created
	if ev.Prev != nil && sel.empty() && ev.Type == storage.EventPut {
		// Everything matches an empty selector: the previous object is needed only
		// to say whether it matched, so it is not decoded (every update of a watched
		// object would decode its previous revision, which the object cache, holding
		// only the latest, never has).
		prevMatch = true
	} else if ev.Prev != nil {
		var err error
		if prev, err = s.decode(r, *ev.Prev); err != nil {
			return err
		}
		prevMatch = sel.matches(r, prev)
	}
	if ev.Type == storage.EventDelete {
		if !prevMatch {
			return nil
		}
		// The deleted object is the last state, at the revision of the deletion.
		setResourceVersion(prev, ev.Revision)
		return enc.send(watch.Deleted, prev)
	}
	// Only read and encoded from here on: the cached object itself will do.
	obj, err := s.decodeShared(r, ev.KV)
	if err != nil {
		return err
	}
	curMatch := sel.matches(r, obj)
	switch {
	case curMatch && prevMatch:
		return enc.send(watch.Modified, obj)
	case curMatch:
		return enc.send(watch.Added, obj)
	case prevMatch:
		return enc.send(watch.Deleted, obj)
	}
	return nil
}

// watchEncoder writes watch events and flushes each: newline-separated JSON objects
// {"type":...,"object":...}, or in protobuf length-prefixed metav1.WatchEvent messages
// whose object is in the protobuf envelope.
type watchEncoder struct {
	w             http.ResponseWriter
	flusher       http.Flusher
	r             *Resource
	format        responseFormat
	includeObject string
	now           func() time.Time

	// buf holds the event being written (JSON) or its object (protobuf); it is reused
	// from event to event, as are the encoders and the protobuf encoding buffer.
	buf    bytes.Buffer
	json   *json.Encoder // into buf
	alloc  runtime.Allocator
	frames io.Writer // protobuf: a length prefix before each write to w
}

func newWatchEncoder(w http.ResponseWriter, flusher http.Flusher, r *Resource, format responseFormat, includeObject string, now func() time.Time) *watchEncoder {
	e := &watchEncoder{w: w, flusher: flusher, r: r, format: format, includeObject: includeObject, now: now}
	e.json = json.NewEncoder(&e.buf)
	if format.protobuf() {
		e.frames = protobuf.LengthDelimitedFramer.NewFrameWriter(w)
	}
	return e
}

func (e *watchEncoder) contentType() string {
	if e.format.protobuf() {
		return protobufWatchContentType
	}
	return "application/json"
}

func (e *watchEncoder) send(t watch.EventType, obj runtime.Object) error {
	if e.format == formatTable {
		tbl, err := buildTable(e.r, []runtime.Object{obj}, e.now(), e.includeObject, metav1.ListMeta{})
		if err != nil {
			return err
		}
		return e.write(t, tbl)
	}
	if e.format.metadataOnly() {
		m, err := asPartialObjectMetadata(obj)
		if err != nil {
			return err
		}
		return e.write(t, m)
	}
	stampKind(obj, e.r.GroupVersionKind())
	return e.write(t, obj)
}

// bookmark tells the client everything up to rev has been sent. Its object is of the
// kind the stream carries, empty but for the resourceVersion (and the annotation
// ending a watch-list's initial events).
func (e *watchEncoder) bookmark(rev int64, initialEnd bool) error {
	var obj runtime.Object
	if e.format.metadataOnly() {
		obj = &metav1.PartialObjectMetadata{}
		obj.GetObjectKind().SetGroupVersionKind(partialObjectMetadataGVK)
	} else {
		obj = e.r.New()
		obj.GetObjectKind().SetGroupVersionKind(e.r.GroupVersionKind())
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	if initialEnd {
		acc.SetAnnotations(map[string]string{initialEventsEndAnnotation: "true"})
	}
	return e.write(watch.Bookmark, obj)
}

// write sends one event; obj's kind must be set.
func (e *watchEncoder) write(t watch.EventType, obj runtime.Object) error {
	e.buf.Reset()
	var err error
	if e.format.protobuf() {
		err = e.writeProtobuf(t, obj)
	} else {
		err = e.writeJSON(t, obj)
	}
	if err != nil {
		return err
	}
	e.flusher.Flush()
	return nil
}

// writeJSON writes the event line around the object's JSON as it is encoded, rather
// than marshalling a metav1.WatchEvent holding that JSON, which would validate and
// copy the object's bytes a second time.
func (e *watchEncoder) writeJSON(t watch.EventType, obj runtime.Object) error {
	e.buf.WriteString(`{"type":`)
	e.buf.WriteString(strconv.Quote(string(t)))
	e.buf.WriteString(`,"object":`)
	// Encode writes what json.Marshal would, then a newline.
	if err := e.json.Encode(obj); err != nil {
		return err
	}
	e.buf.Truncate(e.buf.Len() - 1)
	e.buf.WriteString("}\n")
	_, err := e.w.Write(e.buf.Bytes())
	return err
}

// writeProtobuf writes one length-prefixed WatchEvent frame.
func (e *watchEncoder) writeProtobuf(t watch.EventType, obj runtime.Object) error {
	if err := protobufCodec.EncodeWithAllocator(obj, &e.buf, &e.alloc); err != nil {
		return err
	}
	// The object's bytes are in buf now, so the allocator's buffer is free again. The
	// event is written in one write, which the framer prefixes with its length.
	ev := &metav1.WatchEvent{Type: string(t), Object: runtime.RawExtension{Raw: e.buf.Bytes()}}
	return protobufRawCodec.EncodeWithAllocator(ev, e.frames, &e.alloc)
}
