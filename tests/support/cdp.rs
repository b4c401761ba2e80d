//! Headless Chromium driven over the Chrome DevTools Protocol on `--remote-debugging-pipe`
//! (the browser reads commands on descriptor 3 and writes answers on 4, each a JSON message
//! ended by a NUL byte): one page to navigate, type into, click and query.

use serde_json::{json, Value};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// How long one answer or event may take.
const WAIT: Duration = Duration::from_secs(60);

/// A pipe whose ends close on exec: (read, write).
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes; each is owned once.
    unsafe {
        assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    }
}

/// A browser with one page open.
pub struct Browser {
    child: Child,
    commands: File,
    messages: Receiver<Value>,
    events: Vec<Value>,
    next_id: u64,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts headless Chromium at `path` with a blank page of `width`×`height` pixels.
    pub fn launch(path: &str, width: u32, height: u32) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let (browser_reads, commands) = pipe();
        let (answers, browser_writes) = pipe();
        let (r, w) = (browser_reads.as_raw_fd(), browser_writes.as_raw_fd());
        let mut command = Command::new(path);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(format!("--window-size={width},{height}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls between fork and exec. The ends are first
        // copied above 9, so that neither dup2 overwrites the other's source.
        unsafe {
            command.pre_exec(move || {
                let r2 = libc::fcntl(r, libc::F_DUPFD, 10);
                let w2 = libc::fcntl(w, libc::F_DUPFD, 10);
                if r2 < 0 || w2 < 0 || libc::dup2(r2, 3) < 0 || libc::dup2(w2, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("chromium starts");
        drop((browser_reads, browser_writes));
        let (tx, messages) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(File::from(answers));
            let mut message = Vec::new();
            while reader.read_until(0, &mut message).unwrap_or(0) > 0 {
                if message.last() == Some(&0) {
                    message.pop();
                }
                let Ok(v) = serde_json::from_slice(&message) else {
                    return;
                };
                if tx.send(v).is_err() {
                    return;
                }
                message.clear();
            }
        });
        let mut browser = Browser {
            child,
            commands: File::from(commands),
            messages,
            events: Vec::new(),
            next_id: 0,
            session: String::new(),
            _profile: profile,
        };
        let target = browser.send("Target.createTarget", json!({ "url": "about:blank" }));
        let attached = browser.send(
            "Target.attachToTarget",
            json!({ "targetId": target["targetId"], "flatten": true }),
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_owned();
        browser.call("Page.enable", json!({}));
        browser.call("Runtime.enable", json!({}));
        browser
    }

    fn next_message(&mut self, what: &str, started: Instant) -> Value {
        let left = WAIT.saturating_sub(started.elapsed());
        self.messages
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no {what} from the browser: {e}"))
    }

    fn command(&mut self, method: &str, params: Value, session: bool) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if session {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        self.commands.write_all(&bytes).unwrap();
        let started = Instant::now();
        loop {
            let m = self.next_message(method, started);
            if m["id"] == json!(id) {
                assert!(m.get("error").is_none(), "{method}: {m}");
                return m["result"].clone();
            }
            if m.get("method").is_some() {
                self.events.push(m);
            }
        }
    }

    fn send(&mut self, method: &str, params: Value) -> Value {
        self.command(method, params, false)
    }

    /// A command to the page.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.command(method, params, true)
    }

    /// Runs `action`, then waits until the page has loaded again.
    pub fn until_loaded(&mut self, action: impl FnOnce(&mut Browser)) {
        self.events.retain(|e| e["method"] != "Page.loadEventFired");
        action(self);
        let started = Instant::now();
        while !self
            .events
            .iter()
            .any(|e| e["method"] == "Page.loadEventFired")
        {
            let m = self.next_message("page load", started);
            if m.get("method").is_some() {
                self.events.push(m);
            }
        }
        self.events.retain(|e| e["method"] != "Page.loadEventFired");
    }

    /// Opens `url` and waits for it to load.
    pub fn open(&mut self, url: &str) {
        self.until_loaded(|b| {
            b.call("Page.navigate", json!({ "url": url }));
        });
    }

    /// Presses and releases `key` (`"p"`, `"Enter"`, `"ArrowRight"`).
    pub fn press(&mut self, key: &str) {
        let (code, text, vk) = match key {
            "Enter" => ("Enter".to_owned(), "\r".to_owned(), 13),
            "ArrowRight" => ("ArrowRight".to_owned(), String::new(), 39),
            "ArrowLeft" => ("ArrowLeft".to_owned(), String::new(), 37),
            k if k.len() == 1 && k.as_bytes()[0].is_ascii_alphabetic() => (
                format!("Key{}", k.to_ascii_uppercase()),
                k.to_owned(),
                u32::from(k.to_ascii_uppercase().as_bytes()[0]),
            ),
            k if k.len() == 1 && k.as_bytes()[0].is_ascii_digit() => (
                format!("Digit{k}"),
                k.to_owned(),
                u32::from(k.as_bytes()[0]),
            ),
            k => panic!("no key `{k}` here"),
        };
        for kind in ["keyDown", "keyUp"] {
            let mut event = json!({
                "type": kind, "key": key, "code": code, "windowsVirtualKeyCode": vk,
            });
            if kind == "keyDown" && !text.is_empty() {
                event["text"] = json!(text);
            }
            self.call("Input.dispatchKeyEvent", event);
        }
    }

    /// Types `text` where the focus is.
    pub fn type_text(&mut self, text: &str) {
        self.call("Input.insertText", json!({ "text": text }));
    }

    /// Clicks the middle of the element `selector` finds, with the mouse.
    pub fn click(&mut self, selector: &str) {
        let at = self.eval(&format!(
            "(()=>{{const r=document.querySelector({}).getBoundingClientRect();\
             return [r.x+r.width/2,r.y+r.height/2];}})()",
            json!(selector)
        ));
        let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            );
        }
    }

    /// The value of the JavaScript expression `expression` in the page.
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
        );
        assert!(r.get("exceptionDetails").is_none(), "{expression}: {r}");
        r["result"]["value"].clone()
    }

    /// The console messages and uncaught exceptions seen so far.
    pub fn console(&self) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| {
                e["method"] == "Runtime.consoleAPICalled"
                    || e["method"] == "Runtime.exceptionThrown"
            })
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Browser {
    /// A PNG of the page as it is shown.
    pub fn screenshot(&mut self) -> Vec<u8> {
        let shot = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        base64(shot["data"].as_str().unwrap())
    }
}

/// `text` decoded from standard base64.
fn base64(text: &str) -> Vec<u8> {
    let digit = |c: u8| -> u32 {
        u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        })
    };
    let digits: Vec<u32> = text.bytes().filter(|&c| c != b'=').map(digit).collect();
    digits
        .chunks(4)
        .flat_map(|c| {
            let n = c
                .iter()
                .enumerate()
                .fold(0, |n, (i, d)| n | d << (18 - 6 * i));
            (0..c.len() - 1).map(move |i| (n >> (16 - 8 * i)) as u8)
        })
        .collect()
}
