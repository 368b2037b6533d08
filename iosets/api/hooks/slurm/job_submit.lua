--[[
job_submit.lua for iosets: tag each new job with its IO-SETS set, read from a local file.

`iosets serve --lua-out /etc/slurm/iosets.lua` (or `iosets export --format lua`) writes the
file; this hook only reads it (no network call happens inside slurmctld). The path is
$IOSETS_LUA in slurmctld's environment, else IOSETS_FILE below. The file is read again at
most every IOSETS_CHECK seconds and parsed only when its text changed (plain Lua cannot
stat a file, so its text stands in for its mtime); a file that is not a version-1 document
is logged once and the last good one is kept.

The job's name (-J, or the script name) is looked up as the app: the submitting user's
entry for it (users[uid], the numeric uid as Darshan records it), else the app's (apps),
else the conservative default set. Each entry is what the service's recommender
(Recommender.predict_one) answers for that app and user.

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
	local rec, source = iosets_lookup(t, job_desc.user_id, job_desc.name)
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
