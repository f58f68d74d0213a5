// The console's two languages. The choice is remembered in the browser (localStorage); the first
// visit follows the browser's own language.

const kStorageKey = "gpurent.language";
export const kLanguages = {"en": "English", "zh-CN": "简体中文"};

const messages = {
  "en": {
    "app.title": "gpurent console",
    "nav.dashboard": "Dashboard", "nav.offers": "GPUs", "nav.launch": "Launch",
    "nav.instances": "Instances", "nav.keys": "API keys", "nav.nodes": "Nodes",
    "nav.signout": "Sign out",
    "signin.title": "Sign in", "signin.key": "API key",
    "signin.hint": "Paste an API key (gpr_…). It is sent once; the console keeps a session cookie, not the key.",
    "signin.submit": "Sign in", "signin.failed": "Sign-in failed: {detail}",
    "common.loading": "Loading…", "common.refresh": "Refresh", "common.cancel": "Cancel",
    "common.confirm": "Confirm", "common.none": "None", "common.error": "Error: {detail}",
    "common.next": "Next page", "common.first": "First page",
    "dashboard.balance": "Balance", "dashboard.running": "Running instances",
    "dashboard.month": "Spent this month", "dashboard.alerts": "Alerts",
    "dashboard.no_alerts": "No alerts.", "dashboard.no_running": "Nothing is running.",
    "dashboard.cost_so_far": "Cost so far",
    "alerts.severity": "Severity", "alerts.rule": "Rule", "alerts.subject": "Subject",
    "alerts.state": "State",
    "offers.type": "GPU", "offers.memory": "Memory", "offers.free": "Free",
    "offers.total": "Total", "offers.on_one_node": "Most on one node",
    "offers.on_demand": "On-demand / GPU·h", "offers.spot": "Spot / GPU·h",
    "offers.filter": "Filter", "offers.min_free": "Free at least", "offers.sort": "Sort by",
    "offers.launch": "Launch", "offers.none": "No GPU is on offer.",
    "launch.title": "Launch an instance", "launch.name": "Name", "launch.gpu_type": "GPU type",
    "launch.gpu_count": "GPUs", "launch.fraction": "Share of one GPU",
    "launch.whole": "Whole GPUs", "launch.template": "Template", "launch.image": "Image",
    "launch.command": "Command", "launch.pricing": "Billing",
    "launch.on_demand": "On-demand", "launch.spot": "Spot", "launch.reserved": "Reservation",
    "launch.max_price": "Highest spot price / GPU·h", "launch.reservation": "Reservation id",
    "launch.idle": "Stop when idle for (minutes, 0: never)",
    "launch.estimate": "Estimated price", "launch.per_hour": "{amount} / hour",
    "launch.submit": "Launch", "launch.launched": "Launched {id}.",
    "launch.none_template": "(none: image and command)",
    "instances.name": "Name", "instances.state": "State", "instances.gpus": "GPUs",
    "instances.node": "Node", "instances.price": "Price / GPU·h", "instances.created": "Created",
    "instances.none": "No instances yet.", "instances.reason": "Why",
    "instance.stop": "Stop", "instance.start": "Start", "instance.delete": "Delete",
    "instance.confirm_stop": "Stop {name}? Its process ends; its disk is kept.",
    "instance.confirm_delete": "Delete {name}? It ends for good.",
    "instance.events": "Events", "instance.logs": "Logs", "instance.jupyter": "Open Jupyter",
    "instance.details": "Details", "instance.follow": "Follow",
    "instance.charts": "GPU metrics", "instance.terminal": "Terminal", "events.message": "What happened",
    "chart.util": "Utilisation", "chart.memory": "Memory used", "chart.temperature": "Temperature",
    "chart.power": "Power", "chart.no_data": "No samples in this range yet.",
    "nav.billing": "Billing", "nav.jobs": "Jobs", "nav.reservations": "Reservations",
    "nav.volumes": "Volumes", "nav.alerts": "Alerts", "nav.tenants": "Tenants",
    "nav.prices": "Prices",
    "jobs.shape": "Tasks × nodes × GPUs", "jobs.tasks": "Tasks by state", "jobs.none": "No jobs yet.",
    "jobs.task": "Task", "jobs.attempts": "Attempts", "jobs.exit": "Exit code",
    "jobs.confirm_cancel": "Cancel {name}? Its queued tasks leave and running ones stop.",
    "reservations.window": "Window", "volumes.size": "Size",
    "reservations.start": "From", "reservations.hours": "Hours", "reservations.quote": "Quote",
    "reservations.book": "Book and pay", "reservations.quoted": "It would cost {amount}.",
    "reservations.booked": "Booked {id}: {amount}.",
    "reservations.confirm_cancel": "Cancel {id}? Before its window it is refunded.",
    "volumes.create": "Create volume", "volumes.confirm_delete": "Delete {name} and its data?",
    "volumes.mount": "Volumes (mount path)",
    "billing.products": "Packages on sale", "billing.buy": "Buy",
    "billing.confirm_buy": "Buy {name} for {amount}? It is paid from the balance at once.",
    "nodes.release": "Release GPU {index}", "nodes.quarantined": "Quarantined",
    "alerts.ack": "Acknowledge", "alerts.history": "Recent transitions", "alerts.rules": "Rules",
    "alerts.condition": "Condition", "alerts.scope": "Scope", "alerts.add_rule": "Add rule",
    "prices.set": "Set a price", "prices.apply": "Apply",
    "tenants.topup": "Top up", "tenants.quota": "Quota", "tenants.set_quota": "Set",
    "tenants.max_instances": "Max instances", "tenants.weight": "Weight",
    "tenants.create": "Create tenant", "tenants.quota_set": "Quota of {name} set.",
    "prices.version": "Price book version {version}, in force since {since}",
    "prices.upcoming": "Upcoming versions", "prices.from": "From", "prices.revenue": "Revenue",
    "billing.usage": "Usage by GPU type and billing mode", "billing.usage_total": "Usage charged",
    "billing.no_usage": "No usage yet.", "billing.invoices": "Invoices", "billing.month": "Month",
    "billing.charges": "Charges", "billing.credits": "Credits", "billing.payments": "Payments",
    "billing.closing": "Closing balance", "billing.packages": "Compute packages",
    "billing.package": "Package", "billing.remaining": "Left", "billing.expires": "Expires",
    "billing.topups": "Top-ups", "billing.ledger": "Ledger (latest 100)", "billing.at": "When",
    "billing.amount": "Amount", "billing.reference": "Reference", "billing.kind": "Kind",
    "keys.title": "API keys", "keys.name": "Name", "keys.prefix": "Starts with",
    "keys.role": "Role", "keys.created": "Created", "keys.create": "Create key",
    "keys.revoke": "Revoke", "keys.confirm_revoke": "Revoke {name}? Programs using it stop working.",
    "keys.created_once": "The new key, shown only now: {key}",
    "nodes.id": "Node", "nodes.status": "Status", "nodes.gpus": "GPUs",
    "nodes.cordon": "Cordon", "nodes.uncordon": "Uncordon", "nodes.drain": "Drain",
    "nodes.confirm_drain": "Drain {name}? Its instances are moved to other nodes.",
    "nodes.moving": "Instances asked to move: {count}.",
    "state.pending": "pending", "state.starting": "starting", "state.running": "running",
    "state.stopping": "stopping", "state.stopped": "stopped", "state.failed": "failed",
    "state.preempted": "preempted", "state.terminated": "terminated",
  },
  "zh-CN": {
    "app.title": "gpurent 控制台",
    "nav.dashboard": "概览", "nav.offers": "GPU 资源", "nav.launch": "创建实例",
    "nav.instances": "实例", "nav.keys": "API 密钥", "nav.nodes": "节点",
    "nav.signout": "退出登录",
    "signin.title": "登录", "signin.key": "API 密钥",
    "signin.hint": "粘贴 API 密钥（gpr_…）。密钥只发送一次，控制台只保留会话 Cookie。",
    "signin.submit": "登录", "signin.failed": "登录失败：{detail}",
    "common.loading": "加载中…", "common.refresh": "刷新", "common.cancel": "取消",
    "common.confirm": "确认", "common.none": "无", "common.error": "出错：{detail}",
    "common.next": "下一页", "common.first": "第一页",
    "dashboard.balance": "余额", "dashboard.running": "运行中的实例",
    "dashboard.month": "本月消费", "dashboard.alerts": "告警",
    "dashboard.no_alerts": "没有告警。", "dashboard.no_running": "没有运行中的实例。",
    "dashboard.cost_so_far": "已产生费用",
    "alerts.severity": "级别", "alerts.rule": "规则", "alerts.subject": "对象",
    "alerts.state": "状态",
    "offers.type": "GPU", "offers.memory": "显存", "offers.free": "空闲",
    "offers.total": "总数", "offers.on_one_node": "单节点最多",
    "offers.on_demand": "按量 / 卡·时", "offers.spot": "竞价 / 卡·时",
    "offers.filter": "筛选", "offers.min_free": "至少空闲", "offers.sort": "排序",
    "offers.launch": "创建", "offers.none": "暂无可用 GPU。",
    "launch.title": "创建实例", "launch.name": "名称", "launch.gpu_type": "GPU 型号",
    "launch.gpu_count": "GPU 数量", "launch.fraction": "单卡份额",
    "launch.whole": "整卡", "launch.template": "模板", "launch.image": "镜像",
    "launch.command": "命令", "launch.pricing": "计费方式",
    "launch.on_demand": "按量计费", "launch.spot": "竞价", "launch.reserved": "预留",
    "launch.max_price": "竞价最高价 / 卡·时", "launch.reservation": "预留 ID",
    "launch.idle": "空闲多久后关机（分钟，0 为不关机）",
    "launch.estimate": "预估价格", "launch.per_hour": "{amount} / 小时",
    "launch.submit": "创建", "launch.launched": "已创建 {id}。",
    "launch.none_template": "（不用模板：填写镜像和命令）",
    "instances.name": "名称", "instances.state": "状态", "instances.gpus": "GPU",
    "instances.node": "节点", "instances.price": "单价 / 卡·时", "instances.created": "创建时间",
    "instances.none": "还没有实例。", "instances.reason": "原因",
    "instance.stop": "关机", "instance.start": "开机", "instance.delete": "释放",
    "instance.confirm_stop": "关闭 {name}？进程会结束，磁盘保留。",
    "instance.confirm_delete": "释放 {name}？释放后无法恢复。",
    "instance.events": "事件", "instance.logs": "日志", "instance.jupyter": "打开 Jupyter",
    "instance.details": "详情", "instance.follow": "实时跟踪",
    "instance.charts": "GPU 监控", "instance.terminal": "终端", "events.message": "内容",
    "chart.util": "利用率", "chart.memory": "显存占用", "chart.temperature": "温度",
    "chart.power": "功耗", "chart.no_data": "该时间段内暂无数据。",
    "nav.billing": "费用", "nav.jobs": "任务", "nav.reservations": "预留",
    "nav.volumes": "数据盘", "nav.alerts": "告警", "nav.tenants": "租户",
    "nav.prices": "价格",
    "jobs.shape": "任务数 × 节点 × GPU", "jobs.tasks": "各状态任务数", "jobs.none": "还没有任务。",
    "jobs.task": "子任务", "jobs.attempts": "尝试次数", "jobs.exit": "退出码",
    "jobs.confirm_cancel": "取消 {name}？排队的子任务将移除，运行中的将停止。",
    "reservations.window": "时间段", "volumes.size": "容量",
    "reservations.start": "开始时间", "reservations.hours": "时长（小时）", "reservations.quote": "询价",
    "reservations.book": "预订并付款", "reservations.quoted": "费用为 {amount}。",
    "reservations.booked": "已预订 {id}：{amount}。",
    "reservations.confirm_cancel": "取消 {id}？开始前取消可退款。",
    "volumes.create": "创建数据盘", "volumes.confirm_delete": "删除 {name} 及其数据？",
    "volumes.mount": "数据盘（挂载路径）",
    "billing.products": "在售套餐", "billing.buy": "购买",
    "billing.confirm_buy": "以 {amount} 购买 {name}？将立即从余额扣款。",
    "nodes.release": "恢复 GPU {index}", "nodes.quarantined": "已隔离",
    "alerts.ack": "确认", "alerts.history": "最近变化", "alerts.rules": "规则",
    "alerts.condition": "条件", "alerts.scope": "范围", "alerts.add_rule": "添加规则",
    "prices.set": "调整价格", "prices.apply": "生效",
    "tenants.topup": "充值", "tenants.quota": "配额", "tenants.set_quota": "设置",
    "tenants.max_instances": "最多实例数", "tenants.weight": "权重",
    "tenants.create": "创建租户", "tenants.quota_set": "已设置 {name} 的配额。",
    "prices.version": "价格表第 {version} 版，自 {since} 起生效",
    "prices.upcoming": "待生效版本", "prices.from": "生效时间", "prices.revenue": "收入",
    "billing.usage": "按 GPU 型号和计费方式的用量", "billing.usage_total": "已扣费用量",
    "billing.no_usage": "暂无用量。", "billing.invoices": "账单", "billing.month": "月份",
    "billing.charges": "消费", "billing.credits": "补偿", "billing.payments": "充值",
    "billing.closing": "期末余额", "billing.packages": "算力套餐",
    "billing.package": "套餐", "billing.remaining": "剩余", "billing.expires": "到期时间",
    "billing.topups": "充值记录", "billing.ledger": "收支明细（最近 100 条）", "billing.at": "时间",
    "billing.amount": "金额", "billing.reference": "备注", "billing.kind": "类型",
    "keys.title": "API 密钥", "keys.name": "名称", "keys.prefix": "前缀",
    "keys.role": "角色", "keys.created": "创建时间", "keys.create": "创建密钥",
    "keys.revoke": "吊销", "keys.confirm_revoke": "吊销 {name}？使用它的程序将无法访问。",
    "keys.created_once": "新密钥（只显示这一次）：{key}",
    "nodes.id": "节点", "nodes.status": "状态", "nodes.gpus": "GPU",
    "nodes.cordon": "停止调度", "nodes.uncordon": "恢复调度", "nodes.drain": "排空",
    "nodes.confirm_drain": "排空 {name}？其上的实例会迁移到其他节点。",
    "nodes.moving": "正在迁移的实例：{count} 个。",
    "state.pending": "排队中", "state.starting": "启动中", "state.running": "运行中",
    "state.stopping": "关机中", "state.stopped": "已关机", "state.failed": "失败",
    "state.preempted": "被抢占", "state.terminated": "已释放",
  },
};

let current = initial();

function initial() {
  const saved = localStorage.getItem(kStorageKey);
  if (saved && messages[saved]) return saved;
  return (navigator.language || "").toLowerCase().startsWith("zh") ? "zh-CN" : "en";
}

export function language() {
  return current;
}

export function setLanguage(code) {
  if (!messages[code]) return;
  current = code;
  localStorage.setItem(kStorageKey, code);
  document.documentElement.lang = code;
}

// t("launch.launched", {id: "i-1"}): the message in the current language (English where a
// translation is missing), with {names} filled in.
export function t(key, values = {}) {
  const text = messages[current][key] ?? messages.en[key] ?? key;
  return text.replace(/\{([a-z_]+)\}/g, (_, name) => String(values[name] ?? ""));
}

// Every key of one language is in the other (checked by the browser tests).
export function missingTranslations() {
  const en = Object.keys(messages.en);
  const zh = Object.keys(messages["zh-CN"]);
  return [...en.filter((k) => !zh.includes(k)), ...zh.filter((k) => !en.includes(k))];
}
