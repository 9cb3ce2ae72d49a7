package apiserver

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func (s *Server) patch(w http.ResponseWriter, req *http.Request, r *Resource, info requestInfo) {
	format, err := objectFormat(req, r)
	if err != nil {
		writeError(w, err)
		return
	}
	mediaType, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil {
		writeError(w, unsupportedPatch(req.Header.Get("Content-Type")))
		return
	}
	patchType := types.PatchType(mediaType)
	switch patchType {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
	default:
		writeError(w, unsupportedPatch(mediaType))
		return
	}
	opts, body, ok := s.readOptionsAndBody(w, req)
	if !ok {
		return
	}
	var warnings []string
	out, _, err := s.guaranteedUpdate(req.Context(), r, info, opts.dryRun, 0, func(old runtime.Object) (runtime.Object, error) {
		current, err := json.Marshal(old)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		patched, err := applyPatch(patchType, current, body, r)
		if err != nil {
			return nil, err
		}
		obj, w, err := decodeObject(r, patched, opts.fieldValidation)
		if err != nil {
			return nil, err
		}
		warnings = w
		return obj, nil
	})
	if err != nil {
		writeError(w, err)
		return
	}
	addWarnings(w, warnings)
	writeObject(w, format, http.StatusOK, r, out)
}

// applyPatch applies one patch document to the JSON of the stored object.
func applyPatch(pt types.PatchType, current, patch []byte, r *Resource) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch pt {
	case types.MergePatchType:
		out, err = jsonpatch.MergePatch(current, patch)
	case types.JSONPatchType:
		var p jsonpatch.Patch
		p, err = jsonpatch.DecodePatch(patch)
		if err == nil {
			out, err = p.Apply(current)
		}
	case types.StrategicMergePatchType:
		out, err = strategicpatch.StrategicMergePatch(current, patch, r.New())
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("applying %s patch: %v", pt, err))
	}
	return out, nil
}

func unsupportedPatch(contentType string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("patch content type %q is not supported; use %s, %s or %s",
			contentType, types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType),
	}}
}
