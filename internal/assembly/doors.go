package assembly

import "net/http"

// door is how the guard treats the requests of one route.
type door struct {
	// open routes are served without credentials: the web UI's pages,
	// the login (whose body is the key), /healthz and /readyz. None of them says
	// anything about jobs or reads more than a small body.
	open bool
	// refuse writes a refusal as the route's clients read one.
	refuse func(http.ResponseWriter, *http.Request, error)
}

// doors say how the guard treats each route, by the pattern it is mounted
// under on the server's mux. A route not named is closed, and its
// refusals are JSON errors: a route added without a word needs a key.
type doors struct {
	mux    *http.ServeMux
	routes map[string]door
}

func newDoors(mux *http.ServeMux) *doors {
	return &doors{mux: mux, routes: map[string]door{}}
}

// of is the door of the route mux would serve r with.
func (d *doors) of(r *http.Request) door {
	_, pattern := d.mux.Handler(r)
	return d.door(pattern)
}

func (d *doors) door(pattern string) door {
	if dr, ok := d.routes[pattern]; ok {
		return dr
	}
	return door{refuse: refuse}
}

// open lets the routes of patterns in without credentials.
func (d *doors) open(patterns ...string) {
	for _, p := range patterns {
		dr := d.door(p)
		dr.open = true
		d.routes[p] = dr
	}
}

// refuseWith has the routes of patterns refused with fn.
func (d *doors) refuseWith(fn func(http.ResponseWriter, *http.Request, error), patterns ...string) {
	for _, p := range patterns {
		dr := d.door(p)
		dr.refuse = fn
		d.routes[p] = dr
	}
}
