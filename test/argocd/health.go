// Package argocd runs the chart's Argo CD health check
// (charts/retention-guard/argocd/health.lua) the way Argo CD does: in
// gopher-lua, with the object as the global obj, the script returning a
// table with status and message. Tests feed it objects the real manager
// wrote.
package argocd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	lua "github.com/yuin/gopher-lua"
)

// Script is the health check's path in the repository.
func Script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "charts", "retention-guard", "argocd", "health.lua")
}

// Health runs the health check on obj (any value that marshals to the
// object's JSON: an unstructured map, a typed API object).
func Health(obj any) (status, message string, err error) {
	script, err := os.ReadFile(Script())
	if err != nil {
		return "", "", err
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return "", "", err
	}
	var m any
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", "", err
	}
	// Argo CD opens only the safe libraries (base, table, string, math).
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", toLua(L, m))
	if err := L.DoString(string(script)); err != nil {
		return "", "", fmt.Errorf("health.lua: %w", err)
	}
	ret, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("health.lua returned %s, want a table", L.Get(-1).Type())
	}
	return lua.LVAsString(ret.RawGetString("status")), lua.LVAsString(ret.RawGetString("message")), nil
}

func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		t := L.NewTable()
		for _, e := range v {
			t.Append(toLua(L, e))
		}
		return t
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	}
	return lua.LString(fmt.Sprint(v))
}
