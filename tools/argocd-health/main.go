// Command argocd-health evaluates an Argo CD resource health script the way Argo CD does, so that the
// scripts under deploy/argocd can be tested without an Argo CD installation:
//
//	argocd-health <health.lua> <object.json>
//
// It prints {"status": ..., "message": ...} as JSON. Like Argo CD (util/lua), it runs the script in a
// gopher-lua state with only the package, base and table libraries open (a health check configured in
// argocd-cm has no string, math or os library unless useOpenLibs is set), passes the object as the
// global `obj`, gives it one second, and reads the table the script returns. A status Argo CD does not
// know becomes Unknown, as in Argo CD.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
)

type health struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

var knownStatuses = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true,
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: argocd-health <health.lua> <object.json>")
		os.Exit(2)
	}
	result, err := evaluate(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(result); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func evaluate(scriptPath, objectPath string) (health, error) {
	script, err := os.ReadFile(scriptPath)
	if err != nil {
		return health{}, err
	}
	objectJSON, err := os.ReadFile(objectPath)
	if err != nil {
		return health{}, err
	}
	var object map[string]interface{}
	if err := json.Unmarshal(objectJSON, &object); err != nil {
		return health{}, fmt.Errorf("%s: %w", objectPath, err)
	}

	state := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer state.Close()
	for name, open := range map[string]lua.LGFunction{
		lua.LoadLibName: lua.OpenPackage,
		lua.BaseLibName: lua.OpenBase,
		lua.TabLibName:  lua.OpenTable,
	} {
		if err := state.CallByParam(lua.P{Fn: state.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			return health{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	state.SetContext(ctx)
	state.SetGlobal("obj", toLua(state, object))
	if err := state.DoString(string(script)); err != nil {
		return health{}, err
	}

	returned, ok := state.Get(-1).(*lua.LTable)
	if !ok {
		return health{}, fmt.Errorf("expect table output from Lua script, not %s", state.Get(-1).Type())
	}
	result := health{
		Status:  luaString(returned.RawGetString("status")),
		Message: luaString(returned.RawGetString("message")),
	}
	if !knownStatuses[result.Status] {
		return health{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
	}
	return result, nil
}

// toLua converts decoded JSON as Argo CD's decodeValue does: objects and arrays become tables (arrays
// 1-based), numbers LNumber, null nil.
func toLua(state *lua.LState, value interface{}) lua.LValue {
	switch converted := value.(type) {
	case bool:
		return lua.LBool(converted)
	case float64:
		return lua.LNumber(converted)
	case string:
		return lua.LString(converted)
	case []interface{}:
		array := state.CreateTable(len(converted), 0)
		for _, item := range converted {
			array.Append(toLua(state, item))
		}
		return array
	case map[string]interface{}:
		table := state.CreateTable(0, len(converted))
		for key, item := range converted {
			table.RawSetH(lua.LString(key), toLua(state, item))
		}
		return table
	}
	return lua.LNil
}

func luaString(value lua.LValue) string {
	if value == lua.LNil {
		return ""
	}
	return value.String()
}
