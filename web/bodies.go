package web

import (
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

// The API's success bodies, one type each, with the snake_case keys the
// clients read; lists go out as [] (never null). Errors have their one
// shape in apierror.go.

// enginesBody is GET /api/engines.
type enginesBody struct {
	Engines []workshop.EngineView `json:"engines"`
}

// labsBody is GET /api/labs: the labs, and the lab files that did not load.
type labsBody struct {
	Labs   []experiments.Lab       `json:"labs"`
	Broken []experiments.BrokenLab `json:"broken"`
}

// runsBody is GET /api/runs.
type runsBody struct {
	Runs []runner.RunView `json:"runs"`
}

// createdBody names what a POST made: a run, an imported run, a search.
type createdBody struct {
	ID string `json:"id"`
}

// stoppingBody names the search a stop was asked of.
type stoppingBody struct {
	Stopping string `json:"stopping"`
}

// featuredBody names the run the presenter featured.
type featuredBody struct {
	Featured string `json:"featured"`
}

// clearedBody says how many queued runs the presenter's clear ended.
type clearedBody struct {
	Cleared int `json:"cleared"`
}

// presenterBody is the presenter's check: the token holds, and the room's
// join code, for the page to show.
type presenterBody struct {
	Presenter bool   `json:"presenter"`
	JoinCode  string `json:"join_code"`
}

// roomBody is the room view, over the API and its websocket.
type roomBody struct {
	Open         bool      `json:"open"`
	Participants []RoomRow `json:"participants"`
}

// roomState is the answer to opening or closing the room.
type roomState struct {
	Open bool `json:"open"`
}

// joinAnswer is POST /api/join's answer.
type joinAnswer struct {
	Joined bool   `json:"joined"`
	Name   string `json:"name"`
}

// removedAnswer is the presenter's answer to removing a participant.
type removedAnswer struct {
	Removed         string `json:"removed"`
	QueuedRunsEnded int    `json:"queued_runs_ended"`
}
