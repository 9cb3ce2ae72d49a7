package controlclient

import (
	"encoding/json"
	"net/http"
)

func jsonDecode(req *http.Request, v any) error { return json.NewDecoder(req.Body).Decode(v) }

func jsonWrite(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
