package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

//go:embed templates/*.html templates/style.css
var assets embed.FS

// Config is what a console needs.
type Config struct {
	// Brokers are the seed brokers the console's client connects to.
	Brokers []string
	// AllowWrites enables the forms that change the cluster (create topic, seek a group).
	AllowWrites bool
	// RequestTimeout bounds the Kafka requests of one page (default 10 s).
	RequestTimeout time.Duration
	// SampleInterval is how often the sampler records end offsets (default 10 s).
	SampleInterval time.Duration
	Logger         *slog.Logger
}

// Server serves the console's pages. Close stops its client and sampler.
type Server struct {
	cfg     Config
	client  *kgo.Client
	adm     *kadm.Client
	pages   map[string]*template.Template
	css     []byte
	mux     *http.ServeMux
	sampler *sampler
	stop    context.CancelFunc
	done    sync.WaitGroup
}

// New makes a console for the cluster cfg.Brokers reach. It does not wait for the cluster:
// pages show the error until it answers.
func New(cfg Config) (*Server, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("console: no brokers")
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.SampleInterval <= 0 {
		cfg.SampleInterval = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// A page shows the cluster as it is now: kgo answers an all-topics Metadata request from
	// its cache for MetadataMinAge (5 s by default), so a topic created just before a page
	// load was missing from it.
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.ClientID("sluice-console"),
		kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	s := &Server{cfg: cfg, client: cl, adm: kadm.NewClient(cl), pages: map[string]*template.Template{}}
	if s.css, err = assets.ReadFile("templates/style.css"); err != nil {
		return nil, err
	}
	for _, name := range []string{"overview", "topics", "topic", "messages", "groups", "group", "error"} {
		t, err := template.New("layout.html").Funcs(templateFuncs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		s.pages[name] = t
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /{$}", s.page("overview", s.overview))
	s.mux.HandleFunc("GET /topics", s.page("topics", s.topics))
	s.mux.HandleFunc("POST /topics", s.write(s.createTopic))
	s.mux.HandleFunc("GET /topics/{topic}", s.page("topic", s.topic))
	s.mux.HandleFunc("GET /topics/{topic}/messages", s.page("messages", s.messages))
	s.mux.HandleFunc("GET /groups", s.page("groups", s.groups))
	s.mux.HandleFunc("GET /groups/{group}", s.page("group", s.group))
	s.mux.HandleFunc("POST /groups/{group}/seek", s.write(s.seekGroup))
	s.mux.HandleFunc("GET /style.css", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Write(s.css)
	})
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.sampler = newSampler(int(time.Hour / cfg.SampleInterval))
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		s.sampleLoop(ctx)
	}()
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close stops the sampler and the client.
func (s *Server) Close() {
	s.stop()
	s.done.Wait()
	s.client.Close()
}

// pageData is what every page template gets: its own data plus the layout's.
type pageData struct {
	Title       string
	Nav         string
	AllowWrites bool
	Flash       string
	Data        any
}

// page renders template name with what load returns; a load error renders the error page
// with status 502 (the cluster did not answer) or the status an httpError carries.
func (s *Server) page(name string, load func(ctx context.Context, r *http.Request) (title string, data any, err error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		title, data, err := load(ctx, r)
		pd := pageData{Title: title, Nav: strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0],
			AllowWrites: s.cfg.AllowWrites, Flash: r.URL.Query().Get("flash"), Data: data}
		status := http.StatusOK
		if err != nil {
			status = http.StatusBadGateway
			var he httpError
			if errors.As(err, &he) {
				status = he.status
			}
			name, pd.Title, pd.Data = "error", "Error", err.Error()
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		if err := s.pages[name].Execute(w, pd); err != nil {
			s.cfg.Logger.Warn("console: rendering a page failed", "page", name, "err", err)
		}
	}
}

// write guards a form handler: 403 unless writes are allowed. The handler answers with a
// redirect (303) to where the result shows, or an error.
func (s *Server) write(handle func(ctx context.Context, r *http.Request) (redirect string, err error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.cfg.AllowWrites {
			http.Error(w, "this console is read-only (start sluice with --console-writes to allow changes)", http.StatusForbidden)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		to, err := handle(ctx, r)
		if err != nil {
			status := http.StatusBadGateway
			var he httpError
			if errors.As(err, &he) {
				status = he.status
			}
			http.Error(w, err.Error(), status)
			return
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
	}
}

// httpError is an error with the HTTP status it should be answered with.
type httpError struct {
	status int
	msg    string
}

func (e httpError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return httpError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}
