#include "chat_page.h"

#include <QHBoxLayout>
#include <QPointer>
#include <QShortcut>
#include <QSplitter>
#include <QVBoxLayout>

namespace tandem::ui {

ChatPage::ChatPage(std::shared_ptr<store::ChatStore> store, QWidget* parent)
    : QWidget(parent),
      store_(std::move(store)),
      async_(std::make_unique<store::AsyncChatStore>(store_)) {
    // --- left: search and conversations ---
    auto* left = new QWidget(this);
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(8, 8, 4, 8);
    auto* newChat = new QPushButton(tr("New chat"), left);
    search_ = new QLineEdit(left);
    search_->setPlaceholderText(tr("Search messages"));
    search_->setClearButtonEnabled(true);
    conversations_ = new ConversationListModel(*async_, this);
    list_ = new QListView(left);
    list_->setModel(conversations_);
    list_->setUniformItemSizes(true);
    leftLayout->addWidget(newChat);
    leftLayout->addWidget(search_);
    leftLayout->addWidget(list_, 1);

    // --- right: header, banner, messages, input ---
    auto* right = new QWidget(this);
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(4, 8, 8, 8);
    auto* header = new QHBoxLayout;
    modelLabel_ = new QLabel(tr("No model loaded"), right);
    QFont bold = modelLabel_->font();
    bold.setBold(true);
    modelLabel_->setFont(bold);
    stats_ = new QLabel(right);
    stats_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    header->addWidget(modelLabel_);
    header->addStretch(1);
    header->addWidget(stats_);
    banner_ = new QLabel(right);
    banner_->setWordWrap(true);
    banner_->setStyleSheet(
        QStringLiteral("QLabel { background: #fdecea; color: #8a1c12; border: 1px solid #f5c2bd;"
                       " border-radius: 6px; padding: 8px; }"));
    banner_->hide();
    view_ = new MessageView(right);
    input_ = new QPlainTextEdit(right);
    input_->setPlaceholderText(tr("Message the model (Ctrl+Enter to send)"));
    input_->setMaximumHeight(110);
    send_ = new QPushButton(tr("Send"), right);
    send_->setDefault(true);
    stop_ = new QPushButton(tr("Stop"), right);
    auto* buttons = new QVBoxLayout;
    buttons->addWidget(send_);
    buttons->addWidget(stop_);
    buttons->addStretch(1);
    auto* inputRow = new QHBoxLayout;
    inputRow->addWidget(input_, 1);
    inputRow->addLayout(buttons);
    rightLayout->addLayout(header);
    rightLayout->addWidget(banner_);
    rightLayout->addWidget(view_, 1);
    rightLayout->addLayout(inputRow);

    auto* split = new QSplitter(this);
    split->addWidget(left);
    split->addWidget(right);
    split->setStretchFactor(1, 1);
    split->setSizes({260, 840});
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(split);

    connect(newChat, &QPushButton::clicked, this, &ChatPage::newConversation);
    connect(search_, &QLineEdit::textChanged, conversations_,
            &ConversationListModel::setSearchText);
    connect(list_, &QListView::activated, this,
            [this](const QModelIndex& i) { openConversation(conversations_->idAt(i.row())); });
    connect(list_, &QListView::clicked, this,
            [this](const QModelIndex& i) { openConversation(conversations_->idAt(i.row())); });
    connect(send_, &QPushButton::clicked, this, &ChatPage::sendInput);
    connect(stop_, &QPushButton::clicked, this, &ChatPage::stop);
    auto* sendKey = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), input_);
    connect(sendKey, &QShortcut::activated, this, &ChatPage::sendInput);
    connect(conversations_, &ConversationListModel::refreshed, this, [this] {
        const int row = conversations_->rowOf(current_);
        if (row >= 0) list_->setCurrentIndex(conversations_->index(row));
    });
    connect(conversations_, &ConversationListModel::failed, this, &ChatPage::showError);

    // --- the worker ---
    worker_ = new GenerationWorker(store_);
    worker_->moveToThread(&thread_);
    thread_.setObjectName(QStringLiteral("generation"));
    connect(worker_, &GenerationWorker::modelLoaded, this,
            [this](const QString& name, const QString& device, qint64 nCtx) {
                modelLoaded_ = true;
                device_ = device;
                modelLabel_->setText(name);
                stats_->setText(tr("%1 · context %2").arg(device).arg(nCtx));
                banner_->hide();
                updateButtons();
                emit modelReady(name);
            });
    connect(worker_, &GenerationWorker::modelFailed, this, [this](const QString& message) {
        modelLoaded_ = false;
        modelLabel_->setText(tr("No model loaded"));
        showError(tr("The model could not be loaded: %1").arg(message));
        updateButtons();
        emit modelFailed(message);
    });
    connect(worker_, &GenerationWorker::userMessageSaved, this, [this](qint64 conversation) {
        if (current_ != conversation) {
            current_ = conversation;
            emit conversationOpened(conversation);
        }
        conversations_->refresh();
    });
    connect(worker_, &GenerationWorker::generationStarted, this,
            [this] { view_->appendMessage(QStringLiteral("assistant"), {}); });
    connect(worker_, &GenerationWorker::piece, this, [this](const QString& text) {
        view_->appendToLast(text);
        emit tokenShown(text);
    });
    connect(worker_, &GenerationWorker::generationFinished, this,
            [this](qint64 id, const QString& reason, double tps, qint64 used, qint64 nCtx) {
                generating_ = false;
                view_->renderNow();
                stats_->setText(tr("%1 tok/s · context %2 / %3 · %4")
                                    .arg(tps, 0, 'f', 1)
                                    .arg(used)
                                    .arg(nCtx)
                                    .arg(device_));
                updateButtons();
                conversations_->refresh();
                emit generationFinished(id, reason);
            });
    connect(worker_, &GenerationWorker::generationFailed, this, [this](const QString& message) {
        generating_ = false;
        // The conversation stays as saved; only the banner tells what went wrong.
        showError(message);
        updateButtons();
        emit generationFinished(-1, QStringLiteral("error: ") + message);
    });
    thread_.start();

    updateButtons();
    conversations_->refresh();
}

ChatPage::~ChatPage() {
    worker_->requestStop();
    thread_.quit();
    thread_.wait();
    delete worker_;
}

void ChatPage::loadModel(const QString& path, int threads) {
    modelLabel_->setText(tr("Loading %1…").arg(path.section(QLatin1Char('/'), -1)));
    modelLoaded_ = false;
    updateButtons();
    QMetaObject::invokeMethod(worker_, "loadModel", Qt::QueuedConnection, Q_ARG(QString, path),
                              Q_ARG(int, threads));
}

void ChatPage::sendInput() {
    const QString text = input_->toPlainText().trimmed();
    if (text.isEmpty() || generating_ || !modelLoaded_) return;
    input_->clear();
    send(text);
}

void ChatPage::send(const QString& text) {
    if (generating_) return;
    generating_ = true;
    banner_->hide();
    if (current_ < 0) view_->setMessages({});
    view_->appendMessage(QStringLiteral("user"), text);
    updateButtons();
    QMetaObject::invokeMethod(worker_, "sendMessage", Qt::QueuedConnection, Q_ARG(qint64, current_),
                              Q_ARG(QString, text), Q_ARG(int, maxTokens_));
}

void ChatPage::stop() {
    worker_->requestStop();
}

void ChatPage::newConversation() {
    if (generating_) return;
    current_ = -1;
    ++openTicket_;
    list_->clearSelection();
    view_->setMessages({});
    input_->setFocus();
}

void ChatPage::openConversation(qint64 id) {
    if (id < 0 || generating_ || id == current_) return;
    current_ = id;
    const quint64 ticket = ++openTicket_;
    QPointer<ChatPage> self(this);
    (void)async_->read([self, id, ticket](store::ChatStore& s) {
        std::vector<MessageView::Entry> entries;
        QString error;
        try {
            for (const auto& m : s.active_path(id))
                entries.push_back({QString::fromUtf8(store::role_name(m.role)),
                                   QString::fromStdString(m.content)});
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        ChatPage* target = self.data();
        if (!target) return;
        QMetaObject::invokeMethod(
            target,
            [self, id, ticket, entries = std::move(entries), error]() mutable {
                if (!self || ticket != self->openTicket_) return;
                if (!error.isEmpty()) self->showError(error);
                self->view_->setMessages(std::move(entries));
                emit self->conversationOpened(id);
            },
            Qt::QueuedConnection);
    });
}

void ChatPage::showError(const QString& message) {
    banner_->setText(message);
    banner_->show();
}

void ChatPage::updateButtons() {
    send_->setEnabled(modelLoaded_ && !generating_);
    stop_->setEnabled(generating_);
}

}  // namespace tandem::ui
