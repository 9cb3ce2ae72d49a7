// Package registry describes each kind the control service serves — its names, scope,
// validation, selectable fields and the Table columns kubectl prints — as
// apiserver.Resource values. The generic REST layer in control/apiserver does the rest.
//
// It owns no state and touches nothing.
package registry
