package config

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Swap behaviours (kubelet's memorySwap.swapBehavior).
const (
	// NoSwap keeps containers off swap: their swap limit is 0 beyond their memory.
	NoSwap = "NoSwap"
	// LimitedSwap gives each Burstable container swap in proportion to its memory
	// request; Guaranteed and BestEffort pods, critical pods and containers whose
	// memory request equals their limit get none. It needs cgroup v2.
	LimitedSwap = "LimitedSwap"
)

// MemorySwapConfig is the memorySwap: section, as kubelet's.
type MemorySwapConfig struct {
	// SwapBehavior is NoSwap (the default) or LimitedSwap.
	SwapBehavior string `json:"swapBehavior"`
}

func defaultMemorySwap() MemorySwapConfig { return MemorySwapConfig{SwapBehavior: NoSwap} }

func (m MemorySwapConfig) validate(path *field.Path) field.ErrorList {
	switch m.SwapBehavior {
	case NoSwap, LimitedSwap:
		return nil
	}
	return field.ErrorList{field.NotSupported(path.Child("swapBehavior"), m.SwapBehavior, []string{NoSwap, LimitedSwap})}
}
