package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"follows/auth"
	"follows/graph/model"

	coderws "github.com/coder/websocket"
)

// FollowEventsSubscription subscribes to the viewer's follow events from
// the cursor $after (from now when null).
const FollowEventsSubscription = `subscription($after: String) {
  followEvents(after: $after) { cursor kind follower { name } followee { name } at } }`

// FollowEvent is an event as the subscription above receives it.
type FollowEvent struct {
	Cursor   string
	Kind     string
	Follower struct{ Name string }
	Followee struct{ Name string }
	At       string
}

// String is "KIND follower->followee".
func (e FollowEvent) String() string {
	return e.Kind + " " + e.Follower.Name + "->" + e.Followee.Name
}

// CursorAfter is the followEvents cursor, for the viewer a, of the event
// with outbox Id id: a's subscription with it gets the events after that
// one. Cursors are signed for their viewer under the server's Secret.
func CursorAfter(a Account, id int64) string {
	viewer, ok := model.ParseUserID(a.ID)
	if !ok {
		panic("apitest: not a user id: " + a.ID)
	}
	tokens, err := auth.NewTokens([]byte(Secret), time.Hour)
	if err != nil {
		panic(err)
	}
	return model.EncodeEventCursor(tokens, viewer, id)
}

// EventCursor is a's cursor of the newest event in the server's outbox,
// so that a subscription from it does not race the events a test makes
// after; "" (from now) when there is none.
func (s *Server) EventCursor(a Account) string {
	s.t.Helper()
	id, err := s.Store.LastEventID(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	if id == 0 {
		return ""
	}
	return CursorAfter(a, id)
}

// Socket is a graphql-transport-ws client: a websocket to /graphql.
type Socket struct {
	t    testing.TB
	conn *coderws.Conn
	ctx  context.Context
}

// Message is one graphql-transport-ws message.
type Message struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// WebsocketURL is the ws:// URL of a server's /graphql at base (http://...).
func WebsocketURL(base string) string {
	return "ws" + strings.TrimPrefix(base, "http") + "/graphql"
}

// DialSocket opens a websocket to url with the graphql-transport-ws
// subprotocol and the request headers given, without sending anything.
// The socket lives until ctx ends or it is closed.
func DialSocket(ctx context.Context, t testing.TB, url string, header http.Header) (*Socket, error) {
	return DialSocketVia(ctx, t, nil, url, header)
}

// DialSocketVia is DialSocket over client's connections (the default
// client's when nil), so that a test can shape its TCP connection.
func DialSocketVia(ctx context.Context, t testing.TB, client *http.Client, url string, header http.Header) (*Socket, error) {
	conn, _, err := coderws.Dial(ctx, url, &coderws.DialOptions{
		HTTPClient:   client,
		Subprotocols: []string{"graphql-transport-ws"},
		HTTPHeader:   header,
	})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(1 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &Socket{t: t, conn: conn, ctx: ctx}, nil
}

// Subscriber opens a websocket to the server, signs in with token in the
// connection_init payload and waits for the acknowledgement.
func (s *Server) Subscriber(token string) *Socket {
	s.t.Helper()
	ws, err := DialSocket(s.t.Context(), s.t, WebsocketURL(s.URL), nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := ws.Init(map[string]any{"Authorization": "Bearer " + token}); err != nil {
		s.t.Fatal(err)
	}
	return ws
}

// Init sends connection_init with payload and waits for connection_ack.
func (ws *Socket) Init(payload map[string]any) error {
	p, _ := json.Marshal(payload)
	if err := ws.Send(Message{Type: "connection_init", Payload: p}); err != nil {
		return err
	}
	m, err := ws.Read()
	if err != nil {
		return err
	}
	if m.Type != "connection_ack" {
		return fmt.Errorf("got %s, want connection_ack", m.Type)
	}
	return nil
}

// Send sends one message.
func (ws *Socket) Send(m Message) error {
	b, _ := json.Marshal(m)
	return ws.conn.Write(ws.ctx, coderws.MessageText, b)
}

// Subscribe starts the follow events subscription id, after the cursor
// (from now when empty).
func (ws *Socket) Subscribe(id, after string) {
	ws.t.Helper()
	vars := map[string]any{"after": nil}
	if after != "" {
		vars["after"] = after
	}
	if err := ws.Send(Message{ID: id, Type: "subscribe", Payload: Body(FollowEventsSubscription, vars)}); err != nil {
		ws.t.Fatal(err)
	}
}

// Read returns the next message other than ping and pong, answering
// pings. An error is the connection's end: its close status is
// CloseStatus(err).
func (ws *Socket) Read() (Message, error) {
	for {
		_, b, err := ws.conn.Read(ws.ctx)
		if err != nil {
			return Message{}, err
		}
		var m Message
		if err := json.Unmarshal(b, &m); err != nil {
			return Message{}, fmt.Errorf("not a message: %s", b)
		}
		switch m.Type {
		case "ping":
			ws.Send(Message{Type: "pong"})
		case "pong", "ka":
		default:
			return m, nil
		}
	}
}

// Next reads the next follow event of any subscription, failing the
// test on anything else.
func (ws *Socket) Next() FollowEvent {
	ws.t.Helper()
	m, err := ws.Read()
	if err != nil {
		ws.t.Fatalf("read: %v", err)
	}
	if m.Type != "next" {
		ws.t.Fatalf("got %s %s, want next", m.Type, m.Payload)
	}
	var r struct {
		Data   struct{ FollowEvents FollowEvent }
		Errors []Error
	}
	if err := json.Unmarshal(m.Payload, &r); err != nil || len(r.Errors) > 0 {
		ws.t.Fatalf("event %s: %v", m.Payload, err)
	}
	return r.Data.FollowEvents
}

// CloseStatus is the close code the server ended the connection with,
// or -1.
func CloseStatus(err error) int {
	return int(coderws.CloseStatus(err))
}

// Close closes the socket normally.
func (ws *Socket) Close() {
	ws.conn.Close(coderws.StatusNormalClosure, "")
}
