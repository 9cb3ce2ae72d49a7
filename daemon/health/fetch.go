package health

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Fetch reads plinthd's verbose /healthz at addr, for plinthctl status. healthy is true
// for a 200 answer; the report lists every check.
func Fetch(addr string) (report string, healthy bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	url := "http://" + addr + "/healthz?verbose"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", false, fmt.Errorf("is plinthd running? %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", false, fmt.Errorf("reading %s: %w", url, err)
	}
	return string(body), resp.StatusCode == http.StatusOK, nil
}
