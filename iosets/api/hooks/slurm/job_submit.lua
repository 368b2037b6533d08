--[[
job_submit.lua for iosets: tag each new job with its IO-SETS set, read from a local file.

`iosets serve --lua-out /etc/slurm/iosets.lua` (or `iosets export --format lua`) writes the
file; this hook only reads it (no network call happens inside slurmctld). The path is
$IOSETS_LUA in slurmctld's environment, else IOSETS_FILE below. The file is read again at
most every IOSETS_CHECK seconds and parsed only when its text changed (plain Lua cannot
stat a file, so its text stands in for its mtime); a file that is not a version-1 document
is logged once and the last good one is kept.

The job's app key is looked up: the program its batch script (job_desc.script) launches,
named as Darshan rows name their app, by the rule of app_key.py and of the analyzer's
app_name (kept equal by the tests): the first command an srun/mpirun/mpiexec... starts, past
the launcher's options, else the first command that is not shell setup; a script or module
an interpreter runs (python3 train.py: train.py), else the executable's basename. A job
without a script (srun, salloc) is keyed by its executable (job_desc.argv[0], all that the
prolog and epilog find in Command=), and the job's name is the key only when neither names
a program. The key finds the submitting user's entry
(users[uid], the numeric uid as Darshan records it), else the app's (apps), else the
document's default answer (set 99 until the service has learned, then the conservative
set). Each entry is what the service's recommender (Recommender.predict_one) answers.

The hook writes admin_comment "iosets set=S priority=P source=lua:user|lua:app|lua:default"
(plus " conservative" for a guess), after any comment already there; the prolog
(prolog_slurmctld) replaces that tag with the service's fresher answer when the job starts.
The IO-SETS priority is a share of the file system's bandwidth, not a place in Slurm's
queue, so the job's priority and nice are left alone. Nothing here fails a submission:
any error is logged and the job goes through untagged.
--]]

local IOSETS_FILE = os.getenv("IOSETS_LUA") or "/etc/slurm/iosets.lua"
local IOSETS_CHECK = 2

local iosets_table = nil
local iosets_text = nil
local iosets_checked_at = nil

-- a table of the layout this hook reads (another file would make every lookup fail)
local function iosets_document(t)
	return type(t) == "table" and t.version == 1 and type(t.users) == "table" and type(t.apps) == "table"
		and type(t.default) == "table"
end

-- the file's chunk, compiled as text only and run with no globals (a document is literals only)
local function iosets_compile(text)
	if text:sub(1, 1) == "\27" then
		return nil, "a compiled chunk, not a document"
	elseif setfenv then -- Lua 5.1 (Debian's slurmctld links liblua5.1)
		local chunk, err = loadstring(text, "=" .. IOSETS_FILE)
		if chunk then
			setfenv(chunk, {})
		end
		return chunk, err
	end
	return load(text, "=" .. IOSETS_FILE, "t", {})
end

local function iosets_parse(text)
	local chunk, err = iosets_compile(text)
	if chunk == nil then
		return nil, err
	end
	local ok, t = pcall(chunk)
	if not ok then
		return nil, tostring(t)
	end
	if not iosets_document(t) then
		return nil, "not an iosets document (version 1)"
	end
	return t
end

local function iosets_load()
	local now = os.time()
	if iosets_checked_at ~= nil and now - iosets_checked_at < IOSETS_CHECK then
		return iosets_table
	end
	iosets_checked_at = now
	local f, err = io.open(IOSETS_FILE, "r")
	local text = f and f:read("*a")
	if f then
		f:close()
	end
	if text == nil then
		slurm.log_error("iosets: cannot load %s: %s", IOSETS_FILE, tostring(err))
	elseif text ~= iosets_text then
		iosets_text = text
		local t, why = iosets_parse(text)
		if t then
			iosets_table = t
		else
			slurm.log_error("iosets: cannot load %s: %s", IOSETS_FILE, why)
		end
	end
	return iosets_table
end

-- ---- the app key: app_key.py's rule, and the analyzer's app_name, in Lua --------------------------------------------

local function iosets_set(...)
	local t = {}
	for _, v in ipairs({ ... }) do
		t[v] = true
	end
	return t
end

local IOSETS_LAUNCHERS = iosets_set("srun", "mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun", "aprun",
	"jsrun", "ibrun")
local IOSETS_LAUNCHER_FLAGS = iosets_set("-l", "--label", "-K", "--kill-on-bad-exit", "-O", "--overcommit", "-Q",
	"--quiet", "-q", "-u", "--unbuffered", "-v", "--verbose", "-X", "--disable-status", "-Z", "--no-allocate", "-E",
	"--preserve-env", "-H", "--hold", "-I", "--immediate", "-k", "--no-kill", "-s", "--oversubscribe", "--exclusive",
	"--exact", "--overlap", "--pty", "--spread-job", "--use-min-nodes", "--contiguous", "--test-only", "--whole",
	"-oversubscribe", "--nooversubscribe", "-nooversubscribe", "--allow-run-as-root", "--report-bindings",
	"-report-bindings", "--display-map", "--tag-output", "-tag-output", "--timestamp-output",
	"--merge-stderr-to-stdout", "--noprefix", "--use-hwthread-cpus", "--bynode", "-bynode", "--byslot", "-byslot",
	"-genvall", "-genvnone", "-envall", "-envnone", "-prepend-rank", "-verbose", "--label-io", "--wait", "--watch",
	"--progress", "--jps", "--dry-run")
local IOSETS_FLUX_LAUNCHES = iosets_set("run", "submit", "bulksubmit")
local IOSETS_SETUP = iosets_set("cd", "pushd", "popd", "export", "unset", "set", "shopt", "module", "ml", "source", ".",
	"ulimit", "umask", "alias", "echo", "printf", "trap", "wait", "true", "false", ":", "mkdir", "rm", "cp", "mv", "ln",
	"touch", "cat", "date", "hostname", "exit", "return", "local", "declare", "typeset", "readonly", "let", "eval",
	"test", "[", "[[", "spack", "conda")
local IOSETS_PREFIXES = iosets_set("do", "then", "else", "time", "exec", "nohup", "command", "builtin", "{", "!")
local IOSETS_CONSTRUCTS = iosets_set("if", "elif", "while", "until", "for", "case", "select", "function", "fi", "done",
	"esac", "}")
local IOSETS_SEPARATORS = iosets_set(";", "&", "|", "\n")
local IOSETS_SCRIPT_MAX = 65536 -- bytes of a script read for its key (app_key.SCRIPT_MAX)

-- the simple commands of the first IOSETS_SCRIPT_MAX bytes of a shell script, as word lists (app_key.script_words);
-- a word's pieces go to a table, joined once: linear in the script's length
local function iosets_script_words(script)
	script = script:sub(1, IOSETS_SCRIPT_MAX)
	local commands, words, word = {}, {}, nil
	local i, n = 1, #script
	local function add(text)
		word = word or {}
		word[#word + 1] = text
	end
	local function finish()
		if word ~= nil then
			words[#words + 1] = table.concat(word)
			word = nil
		end
	end
	while i <= n do
		local c = script:sub(i, i)
		if c == "\\" and i < n then
			if script:sub(i + 1, i + 1) ~= "\n" then -- a backslash-newline joins two lines, and starts no word
				add(script:sub(i + 1, i + 1))
			end
			i = i + 2
		elseif c == "'" then
			local close = script:find("'", i + 1, true) or (n + 1)
			add(script:sub(i + 1, close - 1))
			i = close + 1
		elseif c == '"' then
			i = i + 1
			add("")
			while i <= n and script:sub(i, i) ~= '"' do
				if script:sub(i, i) == "\\" and i < n and ('"\\$`'):find(script:sub(i + 1, i + 1), 1, true) then
					i = i + 1
				end
				add(script:sub(i, i))
				i = i + 1
			end
			i = i + 1
		elseif c == "#" and word == nil then
			i = script:find("\n", i, true) or (n + 1)
		elseif c == " " or c == "\t" or IOSETS_SEPARATORS[c] then
			finish()
			if IOSETS_SEPARATORS[c] and #words > 0 then
				commands[#commands + 1] = words
				words = {}
			end
			i = i + 1
		else
			add(c)
			i = i + 1
		end
	end
	finish()
	if #words > 0 then
		commands[#commands + 1] = words
	end
	return commands
end

local function iosets_basename(path)
	return path:match("[^/]*$")
end

local function iosets_slice(t, from)
	local out = {}
	for k = from, #t do
		out[#out + 1] = t[k]
	end
	return out
end

-- the words of a program this rule can read (not a variable nor a substitution), else {}
local function iosets_program_words(words)
	if #words == 0 or words[1]:find("[%$`]") then
		return {}
	end
	return words
end

-- (by a launcher, the program's words) of a simple command (app_key.launched)
local function iosets_launched(words)
	local i = 1
	while i <= #words and (IOSETS_PREFIXES[words[i]] or words[i]:match("^[%a_][%w_]*=")) do
		i = i + 1
	end
	if i > #words or IOSETS_CONSTRUCTS[words[i]] then
		return false, {}
	end
	if iosets_basename(words[i]) == "flux" and i < #words and IOSETS_FLUX_LAUNCHES[words[i + 1]] then
		i = i + 1 -- flux run: a launcher of two words
	elseif not IOSETS_LAUNCHERS[iosets_basename(words[i])] then
		return false, iosets_program_words(iosets_slice(words, i))
	end
	i = i + 1
	while i <= #words and words[i]:sub(1, 1) == "-" do
		local option = words[i]
		i = i + 1
		if option == "--" then
			break
		end
		local short_with_value = option:sub(1, 2) ~= "--" and #option > 2 and option:sub(3):match("^%d+$") ~= nil
		if not option:find("=", 1, true) and not IOSETS_LAUNCHER_FLAGS[option] and not short_with_value then
			i = i + 1
		end
	end
	return true, iosets_program_words(iosets_slice(words, i))
end

-- the words of the command a batch script runs as its app (app_key.batch_command)
local function iosets_batch_command(script)
	local first = {}
	for _, words in ipairs(iosets_script_words(script)) do
		local by_launcher, program = iosets_launched(words)
		if by_launcher and #program > 0 then
			return program
		end
		if #program > 0 and #first == 0 and not IOSETS_SETUP[program[1]] then
			first = program
		end
	end
	return first
end

-- interpreters as the analyzer's _app_name.py knows them
local function iosets_dotted(text)
	return text == "" or (("." .. text):gsub("%.%d+", "") == "")
end

local function iosets_opts(...)
	return iosets_set(...)
end

local IOSETS_INTERPRETERS = {
	{
		match = function(exe)
			local rest = exe:match("^python(.*)$") or exe:match("^pypy(.*)$")
			return rest ~= nil and iosets_dotted(rest)
		end,
		takes_value = iosets_opts("-X", "-W", "--check-hash-based-pycs"),
		inline_code = iosets_opts("-c"),
		program = iosets_opts("-m"),
		bundled = true,
	},
	{ match = function(exe) return exe == "Rscript" end, inline_code = iosets_opts("-e") },
	{
		match = function(exe) return exe == "R" end,
		inline_code = iosets_opts("-e"),
		program = iosets_opts("-f", "--file"),
		skip = iosets_opts("CMD", "BATCH"),
	},
	{
		match = function(exe)
			local rest = exe:match("^julia(.*)$")
			return rest ~= nil and (rest == "" or (rest:sub(1, 1) == "-" and rest ~= "-" and iosets_dotted(rest:sub(2))))
		end,
		takes_value = iosets_opts("-t", "--threads", "-p", "--procs", "-J", "--sysimage", "-H", "--home", "-L",
			"--load", "-C"),
		inline_code = iosets_opts("-e", "-E", "--eval", "--print"),
		bundled = true,
	},
	{
		match = function(exe) return exe == "java" end,
		takes_value = iosets_opts("-cp", "-classpath", "--class-path", "-p", "--module-path", "--add-modules",
			"--add-opens"),
		program = iosets_opts("-jar", "-m", "--module"),
	},
	{
		match = function(exe)
			local rest = exe:match("^perl(.*)$")
			return rest ~= nil and iosets_dotted(rest)
		end,
		takes_value = iosets_opts("-I", "-M", "-m"),
		inline_code = iosets_opts("-e", "-E"),
		bundled = true,
	},
	{
		match = function(exe)
			local rest = exe:match("^ruby(.*)$")
			return rest ~= nil and iosets_dotted(rest)
		end,
		takes_value = iosets_opts("-I", "-r"),
		inline_code = iosets_opts("-e"),
		bundled = true,
	},
	{
		match = function(exe) return exe == "node" or exe == "nodejs" end,
		takes_value = iosets_opts("-r", "--require", "--import"),
		inline_code = iosets_opts("-e", "--eval", "-p", "--print"),
	},
}
local IOSETS_FILE_OPTIONS = iosets_opts("-jar", "-f", "--file")
local IOSETS_ENV_VALUE_OPTIONS = iosets_opts("-u", "--unset", "-C", "--chdir", "-S", "--split-string")

local function iosets_option(word, spec)
	if word:sub(1, 2) == "--" then
		local name, value = word:match("^([^=]*)=(.*)$")
		if name then
			return name, value
		end
		return word, nil
	end
	if spec.bundled then
		for k = 2, #word do
			local flag = "-" .. word:sub(k, k)
			if (spec.takes_value or {})[flag] or (spec.inline_code or {})[flag] or (spec.program or {})[flag] then
				local value = word:sub(k + 1)
				return flag, value ~= "" and value or nil
			end
		end
	end
	return word, nil
end

local function iosets_program(exe, spec, args)
	local takes, inline, program, skip = spec.takes_value or {}, spec.inline_code or {}, spec.program or {}, spec.skip or {}
	local i = 1
	while i <= #args do
		local word = args[i]
		if word == "--" and i < #args then
			return iosets_basename(args[i + 1])
		end
		if skip[word] then
			i = i + 1
		elseif word:sub(1, 1) ~= "-" then
			return iosets_basename(word)
		else
			local flag, value = iosets_option(word, spec)
			if inline[flag] then
				return exe .. " " .. flag
			end
			if value == nil and (takes[flag] or program[flag]) then
				i = i + 1
				value = args[i] or ""
			end
			if program[flag] then
				local named = value or ""
				if IOSETS_FILE_OPTIONS[flag] then
					named = iosets_basename(named)
				end
				return named ~= "" and named or exe
			end
			i = i + 1
		end
	end
	return exe
end

-- the analyzer's app_name, over a command's words
local function iosets_app_name(words)
	if #words > 0 and iosets_basename(words[1]) == "env" then
		local i = 2
		while i <= #words and (words[i]:sub(1, 1) == "-" or words[i]:find("=", 1, true)) do
			if IOSETS_ENV_VALUE_OPTIONS[words[i]] then
				i = i + 1
			end
			i = i + 1
		end
		words = iosets_slice(words, i)
	end
	if #words == 0 then
		return ""
	end
	local exe = iosets_basename((words[1]:gsub("/+$", "")))
	if exe == "" then
		exe = words[1]
	end
	for _, spec in ipairs(IOSETS_INTERPRETERS) do
		if spec.match(exe) then
			return iosets_program(exe, spec, iosets_slice(words, 2))
		end
	end
	return exe
end

-- the job's app key: its batch script's program, else (no script: srun, salloc) its executable, else its name
local function iosets_app_key(job_desc)
	local name = job_desc.name or ""
	local script = job_desc.script
	if script ~= nil and script ~= "" then
		local words = iosets_batch_command(script)
		if #words > 0 then
			local key = iosets_app_name(words)
			return key ~= "" and key or name
		end
		return name
	end
	-- argv is 0-based; only argv[0], the executable, as Slurm's record keeps it (Command=) for the prolog and epilog
	local argv = job_desc.argv
	if type(argv) == "table" and type(argv[0]) == "string" and argv[0] ~= "" then
		local key = iosets_app_name({ argv[0] })
		return key ~= "" and key or name
	end
	return name
end

-- ---- the look-up ------------------------------------------------------------------------------------------------------

local function iosets_lookup(t, uid, app)
	local by_user = uid and t.users[string.format("%d", uid)]
	if by_user and app and by_user[app] then
		return by_user[app], "lua:user"
	elseif app and t.apps[app] then
		return t.apps[app], "lua:app"
	end
	return t.default, "lua:default"
end

local function iosets_tag(job_desc)
	local t = iosets_load()
	if t == nil then
		return
	end
	local rec, source = iosets_lookup(t, job_desc.user_id, iosets_app_key(job_desc))
	local tag = string.format("iosets set=%d priority=%g source=%s", rec.set, rec.priority, source)
	if rec.conservative then
		tag = tag .. " conservative"
	end
	if job_desc.admin_comment ~= nil and job_desc.admin_comment ~= "" then
		tag = job_desc.admin_comment .. " " .. tag
	end
	job_desc.admin_comment = tag
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	local ok, err = pcall(iosets_tag, job_desc)
	if not ok then
		slurm.log_error("iosets: job not tagged: %s", tostring(err))
	end
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

return slurm.SUCCESS
